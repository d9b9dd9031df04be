/*
 * Virtual domains (issue 20, item 4): a thread keeps its rights to its own
 * domain while keys move, also when it is inside its SIGSEGV handler at the
 * moment a key moves.  Two threads each own three domains (six domains,
 * two keys on hw: every open of a keyless one evicts another domain and
 * re-keys it); each, round after round, opens one of its own (enter or set,
 * READ or RW), makes the allowed accesses, then forbidden ones (a write
 * while it holds READ, a read of one of its closed domains), whose faults
 * the program's own SIGSEGV handler takes; then the allowed accesses
 * again, mpk_get() again, and it closes the domain and probes it closed.
 * Every allowed access must succeed and read what the thread wrote last,
 * every forbidden one must fault at its address, and mpk_get() must give
 * the rights the thread took, before and after each fault.  Half the
 * rounds with a handler installed with SA_NODEFER and an empty sa_mask (a
 * probe handler that may fault again: it probes the same address once more
 * from inside), half with one that blocks SIGSEGV while it runs.
 *
 * MPKIT_VDOM_ROUNDS: rounds per thread (default 1500 on hw, 20000 on soft).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "t_probe.h"

#define NT 2
#define PER 3 /* domains per thread */
#define PAGE 4096
#define KEYS 2

static struct own {
	mpk_domain *d[PER];
	unsigned char *p[PER];
	unsigned char shadow[PER][PAGE];
} own[NT];
static int hw;
static bool nodefer; /* the phase: how the handler is installed */
static unsigned long long rounds;
static unsigned long long n_faults[NT], n_nested[NT], n_keyless[NT];
static int failures; /* atomic: t_fail's counter is not */

#define FAIL(...)                                                              \
	do {                                                                   \
		fprintf(stderr, __VA_ARGS__);                                  \
		fputc('\n', stderr);                                           \
		__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);            \
	} while (0)

/* ---- probes: the program's own SIGSEGV handler ---- */

static __thread volatile int in_nested, nested_faulted;

static void on_segv(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	(void)sig;
	if (!t_probe_caught(si, uc)) {
		static const char msg[] = "t_vdom_fault_probes: unexpected SIGSEGV\n";
		if (write(2, msg, sizeof(msg) - 1) < 0)
			_exit(2);
		_exit(1);
	}
	if (!nodefer || in_nested)
		return; /* SIGSEGV is blocked in here, or this is the second */
	/* A second forbidden probe from in here (this handler's rights are
	 * the kernel's default: a keyed domain is closed; a keyless one is
	 * as closed as it was), faulting into this handler again. */
	int code = t_pr.code, pkey = t_pr.pkey;
	void *addr = t_pr.addr;
	in_nested = 1;
	nested_faulted = t_touch(addr, uc->uc_mcontext.gregs[REG_ERR] & 2, 0, NULL);
	in_nested = 0;
	t_pr.faulted = 1;
	t_pr.code = code;
	t_pr.pkey = pkey;
	t_pr.addr = addr;
}

static unsigned rnd(unsigned long long *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (unsigned)(*s >> 33);
}

/* ---- one thread's rounds ---- */

static void allowed(int t, int i, int rights, unsigned off, const char *when,
		    unsigned long long n)
{
	struct own *o = &own[t];
	unsigned char got;

	if (t_touch(o->p[i] + off, false, 0, &got))
		FAIL("thread %d round %llu %s: read of its domain %d faulted (code %d, key %d), "
		     "rights %d, mpk_get %d, key now %d", t, n, when, i, t_pr.code, t_pr.pkey, rights,
		     mpk_get(o->d[i]), mpk_domain_key(o->d[i]));
	else if (got != o->shadow[i][off])
		FAIL("thread %d round %llu %s: domain %d offset %u reads %d, wrote %d", t, n, when,
		     i, off, got, o->shadow[i][off]);
	if (rights != MPK_RW)
		return;
	unsigned char v = (unsigned char)(n * 7 + off);
	if (t_touch(o->p[i] + off, true, v, NULL))
		FAIL("thread %d round %llu %s: write of its domain %d faulted (code %d, key %d), "
		     "mpk_get %d, key now %d", t, n, when, i, t_pr.code, t_pr.pkey, mpk_get(o->d[i]),
		     mpk_domain_key(o->d[i]));
	else
		o->shadow[i][off] = v;
}

static void forbidden(int t, int i, bool write, unsigned off, const char *when,
		      unsigned long long n)
{
	struct own *o = &own[t];
	unsigned char *p = o->p[i] + off;

	nested_faulted = 0;
	if (!t_touch(p, write, 0x5a, NULL)) {
		FAIL("thread %d round %llu %s: %s of its domain %d succeeded, mpk_get %d", t, n,
		     when, write ? "write" : "read", i, mpk_get(o->d[i]));
		if (write)
			o->shadow[i][off] = 0x5a;
		return;
	}
	n_faults[t]++;
	n_nested[t] += nested_faulted;
	if (nodefer && !nested_faulted)
		FAIL("thread %d round %llu %s: the probe from the handler did not fault", t, n,
		     when);
	if (t_pr.addr != p)
		FAIL("thread %d round %llu %s: fault at %p, not %p", t, n, when, t_pr.addr,
		     (void *)p);
	/* Keyed: SEGV_PKUERR, with the key, or 0 when the other thread moved
	 * the pages to key 0 (an eviction) between the fault and the
	 * kernel's look at them. */
	if (t_pr.code == SEGV_ACCERR)
		n_keyless[t]++;
	else if (!hw || t_pr.code != SEGV_PKUERR || (unsigned)t_pr.pkey >= 16)
		FAIL("thread %d round %llu %s: code %d key %d", t, n, when, t_pr.code, t_pr.pkey);
}

static void check_get(int t, int i, int want, const char *when, unsigned long long n)
{
	int g = mpk_get(own[t].d[i]);
	if (g != want)
		FAIL("thread %d round %llu %s: mpk_get of its domain %d is %d, holds %d", t, n,
		     when, i, g, want);
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	struct own *o = &own[t];
	unsigned long long s = 20 + (unsigned long long)t + nodefer * 2;
	char name[16];

	for (int i = 0; i < PER && !o->d[i]; i++) {
		snprintf(name, sizeof(name), "t%d-%d", t, i);
		REQUIRE(o->d[i] = mpk_domain_create(name, MPK_RW, 0));
		REQUIRE(o->p[i] = mpk_alloc(o->d[i], PAGE));
		memset(o->p[i], 0, PAGE);
		REQUIRE(mpk_set(o->d[i], MPK_NONE) == 0);
	}
	for (unsigned long long n = 0; n < rounds / 2 && failures < 20; n++) {
		int i = (int)(rnd(&s) % PER), j = (i + 1 + (int)(rnd(&s) % (PER - 1))) % PER;
		int r = rnd(&s) & 1 ? MPK_RW : MPK_READ;
		bool scoped = rnd(&s) & 1;
		unsigned off = rnd(&s) % PAGE;
		mpk_scope sc = { 0 };

		if (scoped) {
			sc = mpk_enter(o->d[i], r);
			if (!sc.domain || sc.saved != MPK_NONE)
				FAIL("thread %d round %llu: enter: saved %d, errno %d", t, n,
				     sc.saved, errno);
		} else if (mpk_set(o->d[i], r)) {
			FAIL("thread %d round %llu: set: errno %d", t, n, errno);
		}
		check_get(t, i, r, "opened", n);
		allowed(t, i, r, off, "opened", n);
		if (r == MPK_READ)
			forbidden(t, i, true, off, "held READ", n);
		forbidden(t, j, rnd(&s) & 1, off, "another closed", n);
		/* Back from the handler: still what it took. */
		check_get(t, i, r, "after the faults", n);
		allowed(t, i, r, off, "after the faults", n);
		if (scoped ? mpk_leave(&sc) : mpk_set(o->d[i], MPK_NONE))
			FAIL("thread %d round %llu: close: errno %d", t, n, errno);
		check_get(t, i, MPK_NONE, "closed", n);
		forbidden(t, i, false, off, "closed", n);
		check_get(t, i, MPK_NONE, "closed, after the fault", n);
	}
	return NULL;
}

int main(void)
{
	struct sigaction sa;
	pthread_t th[NT];
	const char *e;

#ifdef __SANITIZE_THREAD__
	/* ThreadSanitizer defers asynchronous signals and wraps handlers: the
	 * handler that skips the faulting access is not what runs. */
	t_skip("signal handlers under ThreadSanitizer are not the program's");
#endif
	hw = t_backend() == MPK_BACKEND_HW;
	rounds = hw ? 1500 : 20000;
	if ((e = getenv("MPKIT_VDOM_ROUNDS")))
		rounds = strtoull(e, NULL, 0);
	if (hw)
		REQUIRE(mpk_set_key_budget(KEYS) == 0);

	for (int phase = 0; phase < 2; phase++) {
		nodefer = phase == 0;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_segv;
		sa.sa_flags = SA_SIGINFO | (nodefer ? SA_NODEFER : 0);
		REQUIRE(sigaction(SIGSEGV, &sa, NULL) == 0);
		for (int t = 0; t < NT; t++)
			REQUIRE(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) == 0);
		for (int t = 0; t < NT; t++)
			REQUIRE(pthread_join(th[t], NULL) == 0);
	}

	struct mpk_stats st;
	REQUIRE(mpk_stats_get(&st) == 0);
	printf("t_vdom_fault_probes: %s, %llu rounds a thread: faults %llu/%llu (%llu/%llu "
	       "keyless, %llu/%llu nested), %llu broadcasts\n",
	       hw ? "hw, 2 keys" : "soft", rounds, n_faults[0], n_faults[1], n_keyless[0],
	       n_keyless[1], n_nested[0], n_nested[1], (unsigned long long)st.broadcasts);
	t_failures += __atomic_load_n(&failures, __ATOMIC_RELAXED);
	return t_done();
}
