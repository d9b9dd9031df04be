/*
 * hw, virtual domains (issue 14, item 1): a domain evicted from its key
 * becomes keyless with the protection of what its threads hold; when they
 * then close it, it is closed.  Budget 1.
 *   Alone: A (RW, key), B created RW evicts A; mpk_set(A, NONE): no key,
 *   rights 0, and a read and a write of A fault (SEGV_ACCERR, A's address).
 *   Then READ again (A wins B's key back): the read succeeds, the write
 *   faults; B, evicted in turn, closes the same way.
 *   Two threads: A shared READ; evicted; the worker closes (main still
 *   reads: the union), then main closes: a read faults.  Then the worker
 *   opens RW alone (A stays keyless: B is held apart): the union is RW,
 *   and after the worker closes nobody can read.
 */
#include <pthread.h>
#include "t.h"

static mpk_domain *A, *B;
static unsigned char *pa;
static pthread_barrier_t bar;

#define CHECK_CLOSED_FAULT(f, p)                                             \
	do {                                                                 \
		struct t_fault t_c_ = (f);                                   \
		CHECK(t_c_.faulted && t_c_.code == SEGV_ACCERR &&            \
		      t_c_.where == (void *)(p));                            \
	} while (0)

static void make_pair(int rights, unsigned flags)
{
	REQUIRE(A = mpk_domain_create("A", rights, flags));
	REQUIRE(pa = mpk_alloc(A, 4096));
	REQUIRE(mpk_domain_key(A) > 0);
	MPK_WITH(A, MPK_RW) pa[1] = 11;
	REQUIRE(B = mpk_domain_create("B", MPK_RW, 0));
	REQUIRE(mpk_domain_key(B) > 0);       /* A's key */
	CHECK_ERR(mpk_domain_key(A), ENOENT); /* A evicted */
	CHECK(mpk_get(A) == rights);
}

static void drop_pair(void)
{
	REQUIRE(mpk_domain_destroy(B) == 0);
	REQUIRE(mpk_domain_destroy(A) == 0);
}

static void alone(void)
{
	make_pair(MPK_RW, 0);
	CHECK_NO_FAULT(t_write_in_child(pa + 2));
	REQUIRE(mpk_set(A, MPK_NONE) == 0);
	CHECK(mpk_get(A) == MPK_NONE);
	CHECK_ERR(mpk_domain_key(A), ENOENT);
	CHECK_CLOSED_FAULT(t_read_in_child(pa + 3), pa + 3);
	CHECK_CLOSED_FAULT(t_write_in_child(pa + 4), pa + 4);
	/* Taking rights wins B's key back (B: RW in the only thread). */
	REQUIRE(mpk_set(A, MPK_READ) == 0);
	CHECK(mpk_get(A) == MPK_READ);
	CHECK(pa[1] == 11);
	CHECK_FAULT(t_write_in_child(pa + 5), A, pa + 5);
	REQUIRE(mpk_set(A, MPK_NONE) == 0);
	CHECK_FAULT(t_read_in_child(pa + 6), A, pa + 6);
	/* B keyless and closed the same way. */
	CHECK_ERR(mpk_domain_key(B), ENOENT);
	CHECK(mpk_get(B) == MPK_RW);
	unsigned char *pb = mpk_alloc(B, 4096);
	REQUIRE(pb);
	pb[1] = 21;
	REQUIRE(mpk_set(B, MPK_NONE) == 0);
	CHECK_CLOSED_FAULT(t_read_in_child(pb + 2), pb + 2);
	drop_pair();
}

static void *worker(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&bar); /* 1: A evicted */
	CHECK(mpk_get(A) == MPK_READ);
	CHECK(pa[1] == 11);
	REQUIRE(mpk_set(A, MPK_NONE) == 0);
	CHECK(mpk_get(A) == MPK_NONE);
	pthread_barrier_wait(&bar); /* 2 */
	pthread_barrier_wait(&bar); /* 3: main closed too */
	REQUIRE(mpk_set(A, MPK_RW) == 0);
	pa[7] = 7;
	pthread_barrier_wait(&bar); /* 4 */
	pthread_barrier_wait(&bar); /* 5 */
	REQUIRE(mpk_set(A, MPK_NONE) == 0);
	pthread_barrier_wait(&bar); /* 6 */
	return NULL;
}

static void threads(void)
{
	pthread_t t;

	REQUIRE(pthread_barrier_init(&bar, NULL, 2) == 0);
	REQUIRE(pthread_create(&t, NULL, worker, NULL) == 0);
	make_pair(MPK_READ, MPK_DOMAIN_SHARED);
	pthread_barrier_wait(&bar); /* 1 */
	pthread_barrier_wait(&bar); /* 2: the worker closed A */
	CHECK(mpk_get(A) == MPK_READ);
	CHECK(pa[1] == 11);
	CHECK_NO_FAULT(t_read_in_child(pa + 8));
	REQUIRE(mpk_set(A, MPK_NONE) == 0);
	CHECK(mpk_get(A) == MPK_NONE);
	CHECK_CLOSED_FAULT(t_read_in_child(pa + 9), pa + 9);
	pthread_barrier_wait(&bar); /* 3 */
	pthread_barrier_wait(&bar); /* 4: the worker holds RW */
	/* B is held apart (main RW, the worker none): A stays keyless. */
	CHECK_ERR(mpk_domain_key(A), ENOENT);
	CHECK(mpk_get(A) == MPK_NONE);
	CHECK_NO_FAULT(t_write_in_child(pa + 10)); /* the union is RW */
	pthread_barrier_wait(&bar); /* 5 */
	pthread_barrier_wait(&bar); /* 6: the worker closed */
	CHECK_CLOSED_FAULT(t_read_in_child(pa + 11), pa + 11);
	REQUIRE(pthread_join(t, NULL) == 0);
	drop_pair();
}

int main(void)
{
	t_need_hw();
	REQUIRE(mpk_set_key_budget(1) == 0);
	alone();
	threads();
	return t_done();
}
