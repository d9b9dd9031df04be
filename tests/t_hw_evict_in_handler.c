/*
 * hw, virtual domains (issue 14, item 2): an eviction decided while a
 * thread is inside a signal handler goes by the rights the thread's own
 * code holds (the outer frame's PKRU), not the handler's, and leaves no
 * stale bits behind for the key.  Budget 1; thread T parked in a SIGUSR1
 * handler (t_parked.h) while main creates B with RW, which needs a key.
 *   T creates A and holds READ, main none (the kernel's bits: main never
 *   touched the key; in the handler T has the same): A is held apart, so
 *   it keeps its key (B stays keyless); after the handler T still reads A,
 *   a write faults (SEGV_PKUERR, A's key).
 *   T READ, main READ: A is evicted (B gets its key); after the handler T
 *   still holds READ (the read succeeds, a write faults SEGV_ACCERR), and
 *   holds nothing of B: a read of B faults (SEGV_PKUERR, B's key, the key
 *   T could read before).
 */
#include "t_parked.h"

static mpk_domain *A, *B;
static unsigned char *pa, *pb;

static void t_reads_a(void)
{
	REQUIRE(mpk_set(A, MPK_READ) == 0);
}

static void t_makes_a(void)
{
	REQUIRE(A = mpk_domain_create("A", MPK_RW, 0));
	REQUIRE(pa = mpk_alloc(A, 4096));
	pa[1] = 11;
	t_reads_a();
}

static void after_apart(void)
{
	CHECK(mpk_get(A) == MPK_READ);
	CHECK_NO_FAULT(t_read_in_child(pa + 1));
	CHECK_FAULT(t_write_in_child(pa + 2), A, pa + 2);
	CHECK(mpk_domain_key(A) > 0);
}

static void after_evicted(void)
{
	CHECK(mpk_get(A) == MPK_READ);
	CHECK_ERR(mpk_domain_key(A), ENOENT);
	CHECK_NO_FAULT(t_read_in_child(pa + 1));
	struct t_fault f = t_write_in_child(pa + 2);
	CHECK(f.faulted && f.code == SEGV_ACCERR && f.where == (void *)(pa + 2));
	CHECK(mpk_get(B) == MPK_NONE);
	CHECK_FAULT(t_read_in_child(pb + 3), B, pb + 3);
}

static void make_a(int main_rights)
{
	REQUIRE(A = mpk_domain_create("A", MPK_RW, 0));
	REQUIRE(pa = mpk_alloc(A, 4096));
	pa[1] = 11;
	REQUIRE(mpk_set(A, main_rights) == 0);
	REQUIRE(mpk_domain_key(A) > 0);
}

static void make_b(void)
{
	REQUIRE(B = mpk_domain_create("B", MPK_RW, 0));
	REQUIRE(pb = mpk_alloc(B, 4096));
	pb[3] = 33;
}

int main(void)
{
	t_need_hw();
	REQUIRE(mpk_set_key_budget(1) == 0);

	t_park_start(t_makes_a, after_apart);
	REQUIRE(mpk_domain_key(A) > 0);
	t_park_enter();
	make_b();
	CHECK(mpk_domain_key(A) > 0);
	CHECK_ERR(mpk_domain_key(B), ENOENT);
	t_park_release();
	REQUIRE(mpk_domain_destroy(B) == 0 && mpk_domain_destroy(A) == 0);

	make_a(MPK_READ);
	int ka = mpk_domain_key(A);
	t_park_start(t_reads_a, after_evicted);
	t_park_enter();
	make_b();
	CHECK_ERR(mpk_domain_key(A), ENOENT);
	CHECK(mpk_domain_key(B) == ka);
	CHECK(mpk_get(A) == MPK_READ);
	t_park_release();
	CHECK(mpk_get(A) == MPK_READ);
	CHECK(pa[1] == 11 && pb[3] == 33);
	return t_done();
}
