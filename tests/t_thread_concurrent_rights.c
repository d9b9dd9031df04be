/*
 * hw: rights are per thread, at the same moment.  Thread A holds RW and
 * writes a domain continuously; meanwhile thread B holds NONE and its read
 * faults (SEGV_PKUERR, the domain's key, B's tid).  The fault callback gives
 * B READ and retries; B's write then faults too and gets RW.  A never
 * faults and keeps writing across B's faults.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>

#include "t.h"

static mpk_domain *d;
static volatile unsigned char *p;
static pthread_barrier_t start;
static unsigned long a_writes; /* atomic */
static int stop;               /* atomic */
static pid_t a_tid, b_tid;

struct seen {
	int count;
	pid_t tid;
	int write, rights, pkey, code, rights_in_cb;
	void *addr;
	mpk_domain *domain;
	unsigned long a_writes; /* A's progress when B faulted */
};
static struct seen faults[4];
static int nfaults; /* only B faults; anything else is recorded too */

static int on_fault(const struct mpk_fault *f, void *arg)
{
	(void)arg;
	int i = __atomic_fetch_add(&nfaults, 1, __ATOMIC_SEQ_CST);
	if (i < 4) {
		faults[i] = (struct seen){
			.tid = f->tid, .write = f->write, .rights = f->rights,
			.pkey = f->pkey, .code = f->si_code, .addr = f->addr,
			.domain = f->domain, .rights_in_cb = mpk_get(f->domain),
			.a_writes = __atomic_load_n(&a_writes, __ATOMIC_SEQ_CST),
		};
	}
	if (i >= 3)
		return MPK_FAULT_ABORT; /* a loop: give up loudly */
	if (mpk_set(f->domain, f->write ? MPK_RW : MPK_READ))
		return MPK_FAULT_ABORT;
	return MPK_FAULT_RETRY;
}

static void *thread_a(void *arg)
{
	(void)arg;
	a_tid = (pid_t)syscall(SYS_gettid);
	REQUIRE(mpk_set(d, MPK_RW) == 0);
	pthread_barrier_wait(&start);
	unsigned long n = 0;
	while (!__atomic_load_n(&stop, __ATOMIC_SEQ_CST)) {
		n++;
		p[64 + n % 256] = (unsigned char)n;
		*(volatile unsigned long *)(p + 1024) = n;
		__atomic_store_n(&a_writes, n, __ATOMIC_SEQ_CST);
		if (n % 4096 == 0 && mpk_get(d) != MPK_RW)
			t_fail("A lost its rights after %lu writes", n);
	}
	CHECK(mpk_get(d) == MPK_RW);
	CHECK(*(volatile unsigned long *)(p + 1024) == n);
	return NULL;
}

/* Wait until A has written more than `than` times. */
static void a_past(unsigned long than)
{
	while (__atomic_load_n(&a_writes, __ATOMIC_SEQ_CST) <= than)
		sched_yield();
}

static void *thread_b(void *arg)
{
	(void)arg;
	b_tid = (pid_t)syscall(SYS_gettid);
	pthread_barrier_wait(&start);
	CHECK(mpk_get(d) == MPK_NONE);
	a_past(1000); /* A is writing now */

	unsigned char v = p[8]; /* faults: B holds NONE */
	__atomic_signal_fence(__ATOMIC_SEQ_CST); /* the handler ran in between */
	CHECK(v == 0x5b);
	CHECK(mpk_get(d) == MPK_READ);
	REQUIRE(__atomic_load_n(&nfaults, __ATOMIC_SEQ_CST) >= 1);
	a_past(faults[0].a_writes + 1000); /* A went on writing */

	p[9] = 0x5c; /* faults: B holds READ */
	__atomic_signal_fence(__ATOMIC_SEQ_CST); /* the handler ran in between */
	CHECK(mpk_get(d) == MPK_RW);
	REQUIRE(__atomic_load_n(&nfaults, __ATOMIC_SEQ_CST) >= 2);
	a_past(faults[1].a_writes + 1000);
	CHECK(p[9] == 0x5c);
	__atomic_store_n(&stop, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

int main(void)
{
	t_need_hw();
	d = mpk_domain_create("concurrent", MPK_RW, 0);
	REQUIRE(d);
	int key = mpk_domain_key(d);
	p = mpk_alloc(d, 4096);
	REQUIRE(p);
	p[8] = 0x5b;
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	REQUIRE(mpk_fault_handler_install(on_fault, NULL) == 0);

	pthread_t a, b;
	REQUIRE(pthread_barrier_init(&start, NULL, 2) == 0);
	REQUIRE(pthread_create(&a, NULL, thread_a, NULL) == 0);
	REQUIRE(pthread_create(&b, NULL, thread_b, NULL) == 0);
	REQUIRE(pthread_join(b, NULL) == 0);
	REQUIRE(pthread_join(a, NULL) == 0);

	/* Exactly B's two faults, as B saw them; A never faulted. */
	CHECK(nfaults == 2);
	for (int i = 0; i < 2 && i < nfaults; i++) {
		CHECK(faults[i].tid == b_tid && faults[i].tid != a_tid);
		CHECK(faults[i].domain == d);
		CHECK(faults[i].code == SEGV_PKUERR);
		CHECK(faults[i].pkey == key);
		CHECK(faults[i].a_writes > 1000);
	}
	CHECK(faults[0].write == 0 && faults[0].addr == (void *)(p + 8));
	CHECK(faults[0].rights == MPK_NONE && faults[0].rights_in_cb == MPK_NONE);
	CHECK(faults[1].write == 1 && faults[1].addr == (void *)(p + 9));
	CHECK(faults[1].rights == MPK_READ && faults[1].rights_in_cb == MPK_READ);

	/* Neither thread's changes reached main. */
	CHECK(mpk_get(d) == MPK_NONE);
	CHECK_FAULT(t_read_in_child((void *)p), d, p);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
