/*
 * hw, virtual domains: a domain evicted from its key (every thread held the
 * same rights) keeps its contents and every thread keeps its rights, and
 * again when it wins a key back (evicting the least recently used domain
 * that can go exactly).  Budget 2, two threads.
 *   A shared READ (key), B shared RW (key), C shared RW: A, least recently
 *   used, is evicted; both threads still read A, neither can write it
 *   (SEGV_ACCERR now).  Then the main thread enters A with RW: A takes B's
 *   key back (B: every thread RW, so B goes soft with RW for all), the other
 *   thread still has READ only (SEGV_PKUERR with A's key), main writes.
 */
#include <pthread.h>
#include "t.h"

static mpk_domain *A, *B, *C;
static unsigned char *pa, *pb;
static pthread_barrier_t bar;
static int w_rights[4];

static void *worker(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&bar); /* 1: A evicted */
	w_rights[0] = mpk_get(A);
	CHECK(pa[1] == 11);
	{
		struct t_fault f = t_write_in_child(pa + 20);
		CHECK(f.faulted && f.code == SEGV_ACCERR && f.where == (void *)(pa + 20));
	}
	pthread_barrier_wait(&bar); /* 2 */
	pthread_barrier_wait(&bar); /* 3: A back with a key */
	w_rights[1] = mpk_get(A);
	w_rights[2] = mpk_get(B);
	CHECK(pa[1] == 12);
	CHECK_FAULT(t_write_in_child(pa + 21), A, pa + 21);
	pb[2] = 22; /* B: RW for all, soft now */
	pthread_barrier_wait(&bar); /* 4 */
	return NULL;
}

int main(void)
{
	pthread_t t;

	t_need_hw();
	REQUIRE(mpk_set_key_budget(2) == 0);
	REQUIRE(pthread_barrier_init(&bar, NULL, 2) == 0);
	REQUIRE(pthread_create(&t, NULL, worker, NULL) == 0);
	REQUIRE(A = mpk_domain_create("A", MPK_READ, MPK_DOMAIN_SHARED));
	REQUIRE(pa = mpk_alloc(A, 4096));
	MPK_WITH(A, MPK_RW) pa[1] = 11;
	REQUIRE(B = mpk_domain_create("B", MPK_RW, MPK_DOMAIN_SHARED));
	REQUIRE(pb = mpk_alloc(B, 4096));
	pb[1] = 21;
	int ka = mpk_domain_key(A), kb = mpk_domain_key(B);
	REQUIRE(ka > 0 && kb > 0);
	REQUIRE(C = mpk_domain_create("C", MPK_RW, MPK_DOMAIN_SHARED));
	CHECK(mpk_domain_key(C) == ka);       /* A's key */
	CHECK_ERR(mpk_domain_key(A), ENOENT); /* A is keyless */
	CHECK(mpk_get(A) == MPK_READ);
	CHECK(pa[1] == 11);
	{
		struct t_fault f = t_write_in_child(pa + 30);
		CHECK(f.faulted && f.code == SEGV_ACCERR && f.where == (void *)(pa + 30));
	}
	pthread_barrier_wait(&bar); /* 1 */
	pthread_barrier_wait(&bar); /* 2 */
	CHECK(w_rights[0] == MPK_READ);

	mpk_scope s = mpk_enter(A, MPK_RW);
	REQUIRE(s.saved == MPK_READ);
	CHECK(mpk_domain_key(A) == kb);       /* B's key: B was least recent */
	CHECK_ERR(mpk_domain_key(B), ENOENT);
	CHECK(mpk_domain_key(C) == ka);
	pa[1] = 12;
	CHECK(mpk_get(B) == MPK_RW);
	CHECK(pb[1] == 21);
	pthread_barrier_wait(&bar); /* 3 */
	pthread_barrier_wait(&bar); /* 4 */
	CHECK(w_rights[1] == MPK_READ);
	CHECK(w_rights[2] == MPK_RW);
	CHECK(pb[2] == 22);
	REQUIRE(mpk_leave(&s) == 0);
	CHECK(mpk_get(A) == MPK_READ);
	CHECK_FAULT(t_write_in_child(pa + 31), A, pa + 31);
	REQUIRE(pthread_join(t, NULL) == 0);
	return t_done();
}
