/*
 * hw key hygiene: two threads hold RW to domain d1 (key k), one blocked in
 * a system call, one spinning in user space.  Main destroys d1 (its memory
 * must be unmapped, its key revoked in every thread), then creates d2, which
 * gets the same key k from the kernel.  Neither thread may reach d2's
 * memory: their accesses fault with SEGV_PKUERR and key k.  d2's memory is
 * fresh (zero), not d1's.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>

#include "t.h"

#define LEN (4 * 4096)

static mpk_domain *d1, *d2;
static unsigned char *p1, *p2;
static pthread_barrier_t bar; /* main + the blocked thread */
static int spin_ready, spin_go; /* atomic */

struct seen {
	int count, pkey, code, rights, write;
	void *addr;
	mpk_domain *domain;
};
static __thread struct seen seen;

static int on_fault(const struct mpk_fault *f, void *arg)
{
	(void)arg;
	if (seen.count++)
		return MPK_FAULT_ABORT;
	seen.pkey = f->pkey;
	seen.code = f->si_code;
	seen.rights = f->rights;
	seen.write = f->write;
	seen.addr = f->addr;
	seen.domain = f->domain;
	if (mpk_set(f->domain, MPK_READ)) /* let the access finish */
		return MPK_FAULT_ABORT;
	return MPK_FAULT_RETRY;
}

/* After d2 exists: this thread has no rights to it, and touching it faults. */
static void check_no_access(const char *who)
{
	int k = mpk_domain_key(d2);

	if (mpk_get(d2) != MPK_NONE)
		t_fail("%s holds rights %d to the new domain", who, mpk_get(d2));
	unsigned char v = *(volatile unsigned char *)(p2 + 100);
	__atomic_signal_fence(__ATOMIC_SEQ_CST); /* the handler ran in between */
	if (seen.count != 1) {
		t_fail("%s read the new domain without a fault", who);
		return;
	}
	CHECK(v == 0);
	CHECK(seen.code == SEGV_PKUERR);
	CHECK(seen.pkey == k);
	CHECK(seen.domain == d2);
	CHECK(seen.addr == (void *)(p2 + 100));
	CHECK(seen.rights == MPK_NONE);
	CHECK(seen.write == 0);
	CHECK(mpk_get(d2) == MPK_READ);
}

static void *blocked(void *arg)
{
	(void)arg;
	REQUIRE(mpk_set(d1, MPK_RW) == 0);
	p1[1] = 0xb1;
	pthread_barrier_wait(&bar); /* 1: holds RW */
	pthread_barrier_wait(&bar); /* 2: d1 destroyed, d2 created */
	check_no_access("blocked thread");
	return NULL;
}

static void *spinner(void *arg)
{
	(void)arg;
	REQUIRE(mpk_set(d1, MPK_RW) == 0);
	p1[2] = 0xb2;
	__atomic_store_n(&spin_ready, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&spin_go, __ATOMIC_SEQ_CST))
		; /* user space only: no system call to interrupt */
	check_no_access("spinning thread");
	return NULL;
}

int main(void)
{
	pthread_t tb, ts;
	struct mpk_stats s0, s1;

	t_need_hw();
	REQUIRE(mpk_fault_handler_install(on_fault, NULL) == 0);
	REQUIRE(d1 = mpk_domain_create("old", MPK_RW, 0));
	int k = mpk_domain_key(d1);
	REQUIRE(p1 = mpk_alloc(d1, LEN));
	memset(p1, 0xee, LEN);
	REQUIRE(mpk_set(d1, MPK_NONE) == 0); /* main itself gives it up */

	REQUIRE(pthread_barrier_init(&bar, NULL, 2) == 0);
	REQUIRE(pthread_create(&tb, NULL, blocked, NULL) == 0);
	REQUIRE(pthread_create(&ts, NULL, spinner, NULL) == 0);
	pthread_barrier_wait(&bar); /* 1 */
	while (!__atomic_load_n(&spin_ready, __ATOMIC_SEQ_CST))
		sched_yield();

	REQUIRE(mpk_stats_get(&s0) == 0);
	REQUIRE(mpk_domain_destroy(d1) == 0);
	REQUIRE(mpk_stats_get(&s1) == 0);
	CHECK(s1.broadcasts > s0.broadcasts); /* the revoke reached out */

	/* No stale pages: d1's range is back in the window's reservation,
	 * with no page resident and no key (a plain SEGV_ACCERR). */
	unsigned char vec = 1;
	CHECK(mincore(p1, 4096, &vec) == 0 && !(vec & 1));
	vec = 1;
	CHECK(mincore(p1 + LEN - 4096, 4096, &vec) == 0 && !(vec & 1));
	struct t_fault f = t_read_in_child(p1 + 1);
	CHECK(f.faulted && f.code == SEGV_ACCERR && f.where == (void *)(p1 + 1));

	REQUIRE(d2 = mpk_domain_create("new", MPK_RW, 0));
	if (mpk_domain_key(d2) != k) {
		printf("skip: kernel handed key %d, not the freed %d\n",
		       mpk_domain_key(d2), k);
		exit(T_SKIP); /* threads are parked; nothing to clean up */
	}
	REQUIRE(p2 = mpk_alloc(d2, LEN));
	CHECK(mpk_get(d2) == MPK_RW); /* the creator got what it asked */
	for (size_t i = 0; i < LEN; i++)
		if (p2[i]) {
			t_fail("new domain's byte %zu is 0x%02x, not zero", i, p2[i]);
			break;
		}

	pthread_barrier_wait(&bar); /* 2 */
	__atomic_store_n(&spin_go, 1, __ATOMIC_SEQ_CST);
	REQUIRE(pthread_join(tb, NULL) == 0);
	REQUIRE(pthread_join(ts, NULL) == 0);
	CHECK(seen.count == 0); /* main, which holds RW, never faulted */
	CHECK(mpk_get(d2) == MPK_RW);
	CHECK(mpk_domain_destroy(d2) == 0);
	return t_done();
}
