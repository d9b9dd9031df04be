/*
 * JIT code through a domain (mpk_code_alloc), on both backends.  Code in a
 * shared read-only domain "jit": every thread runs it; only inside
 * MPK_WITH(jit, MPK_RW) can it be written (hw: pages rwx, the key decides;
 * soft: r-x flipped to rw- and back, never both).  A write outside the
 * window faults and mpkit's report names "jit" (SEGV_PKUERR with the key on
 * hw, SEGV_ACCERR on soft); on hw also while another thread holds the
 * window (rights are per thread).  Two threads run the code in a loop while
 * the main thread re-emits it 50 times (two slots in turn, see below; the published one
 * swapped with a release store and a serialising membarrier): each sees
 * every value it gets in order and reaches each new one.  On soft the
 * runners meet the write window (no execute right then) and wait for it in
 * mpkit's handler.
 */
#include <cpuid.h>
#include <pthread.h>
#include <time.h>

#include "t_code.h"

#define ROUNDS 50
#define SLOT 64 /* (ROUNDS + 1) slots fit the page */

static mpk_domain *jit;
static uint8_t *code;
static t_fn published;
static volatile int stop;
static int seen[2];
static int bad;

static void write_code(void *p)
{
	t_touch_write(p);
}

static void *hold_window(void *arg)
{
	int *fds = arg;
	char c = 0;
	REQUIRE(mpk_set(jit, MPK_RW) == 0);
	if (write(fds[1], &c, 1) != 1)
		_exit(4);
	pause();
	return NULL;
}

/* In a child: another thread holds the window; this one writes. */
static void write_while_other_holds(void *p)
{
	int fds[2];
	char c;
	pthread_t t;
	REQUIRE(pipe(fds) == 0);
	REQUIRE(pthread_create(&t, NULL, hold_window, fds) == 0);
	REQUIRE(read(fds[0], &c, 1) == 1);
	t_touch_write(p);
}

static void *runner(void *arg)
{
	int i = (int)(intptr_t)arg, last = 0;

	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		t_fn f = __atomic_load_n(&published, __ATOMIC_ACQUIRE);
		int v = f();
		if (v < last)
			__atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
		last = v;
		__atomic_store_n(&seen[i], v, __ATOMIC_RELEASE);
		sched_yield(); /* two cores, three busy threads: let the writer in */
	}
	return NULL;
}

/* The write faulted where it was made, as the backend raises it, and
 * mpkit's report named "jit" and a write (exit 42). */
static void check_fault(struct t_fault f, void *where)
{
	CHECK_FAULT(f, jit, where);
	CHECK(f.exit_code == 42);
}

static bool timed_out(const struct timespec *since)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec - since->tv_sec > 20;
}

/* QEMU's TCG (the PKU VM) names itself in the hypervisor leaf. */
static bool under_tcg(void)
{
	unsigned a, b, c, d;
	char vendor[13] = "";

	__cpuid(1, a, b, c, d);
	if (!(c & (1u << 31)))
		return false;
	__cpuid(0x40000000, a, b, c, d);
	memcpy(vendor, &b, 4);
	memcpy(vendor + 4, &c, 4);
	memcpy(vendor + 8, &d, 4);
	return !strcmp(vendor, "TCGTCGTCGTCG");
}

/*
 * Two threads run the code while this one re-emits it.  On a real CPU the
 * two slots alternate, so executed bytes are rewritten.  Under QEMU's
 * multi-threaded TCG (7.2, the VM's) a rewritten slot can keep running its
 * stale translation for good, on every thread, the writer's too (about one
 * run in five; a 40-line program without mpkit shows it, with no key or
 * fork involved), so there each patch goes to a slot never run before:
 * still a write into the page the other threads are executing.
 */
static void patch_while_running(void)
{
	bool fresh = under_tcg();
	pthread_t t[2];
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	published = (t_fn)code;
	for (int i = 0; i < 2; i++)
		REQUIRE(pthread_create(&t[i], NULL, runner, (void *)(intptr_t)i) == 0);
	for (int v = 2; v <= ROUNDS; v++) {
		uint8_t *slot = code + (fresh ? v : v % 2) * SLOT;
		MPK_WITH(jit, MPK_RW) {
			t_emit_ret(slot, (uint32_t)v);
		}
		t_sync_core();
		__atomic_store_n(&published, (t_fn)slot, __ATOMIC_RELEASE);
		/* Each runner has moved on to the new slot before the old one
		 * is rewritten. */
		for (int i = 0; i < 2; i++) {
			clock_gettime(CLOCK_MONOTONIC, &t1);
			while (__atomic_load_n(&seen[i], __ATOMIC_ACQUIRE) < v && !timed_out(&t1))
				nanosleep(&(struct timespec){ 0, 10000 }, NULL);
			int got = __atomic_load_n(&seen[i], __ATOMIC_ACQUIRE);
			if (got < v) {
				/* Fail with the state rather than hang. */
				printf("runner %d stuck at %d after patch %d; the slot reads %u, runs %d\n", i,
				       got, v, (unsigned)slot[1], ((t_fn)slot)());
				CHECK(got >= v);
				break;
			}
		}
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%s: %d patches while 2 threads ran the code: %.2f s\n", mpk_backend_name(mpk_backend()),
	       ROUNDS - 1, (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	CHECK(bad == 0);
	CHECK(seen[0] == ROUNDS && seen[1] == ROUNDS);
}

static void scenario(void)
{
	char perms[5];

	jit = mpk_domain_create("jit", MPK_READ, MPK_DOMAIN_SHARED);
	REQUIRE(jit);
	code = mpk_code_alloc(jit, 4096);
	REQUIRE(code);
	bool keyed = mpk_domain_key(jit) >= 0;
	t_perms(code, perms);
	CHECK(!strcmp(perms, keyed ? "rwxp" : "r-xp"));
	MPK_WITH(jit, MPK_RW) {
		t_emit_ret(code, 1);
		t_perms(code, perms);
		CHECK(!strcmp(perms, keyed ? "rwxp" : "rw-p"));
	}
	t_perms(code, perms);
	CHECK(!strcmp(perms, keyed ? "rwxp" : "r-xp"));
	CHECK(((t_fn)code)() == 1);
	CHECK(code[0] == 0xb8); /* readable outside the window */

	patch_while_running();

	check_fault(t_mpk_write_fault_in_child("jit", write_code, code + 1), code + 1);
	if (keyed)
		check_fault(t_mpk_write_fault_in_child("jit", write_while_other_holds, code + 2), code + 2);

	CHECK(mpk_free(jit, code) == 0);
	CHECK(mpk_domain_destroy(jit) == 0);
}

int main(void)
{
	return t_both_backends(scenario);
}
