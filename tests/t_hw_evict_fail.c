/*
 * hw, virtual domains under failure (test-only hook mpk__test_fail() in
 * src/core/os.c): pkey_alloc() failing with ENOSPC makes a create evict; a
 * pkey_mprotect() failing half-way through the eviction leaves the victim
 * on its key, its two regions intact and protected (SEGV_PKUERR with its
 * key), and the new domain keyless but working (SEGV_ACCERR when closed).
 * A failure while re-keying leaves the domain keyless, intact and
 * protected; the next try succeeds with the key kept aside.
 */
#include "t.h"
#include "../src/core/testing.h"

int main(void)
{
	mpk_domain *A, *C;
	unsigned char *a1, *a2, *c;

	t_need_hw();
	REQUIRE(A = mpk_domain_create("A", MPK_RW, 0));
	REQUIRE(a1 = mpk_alloc(A, 4096));
	REQUIRE(a2 = mpk_alloc(A, 4096));
	a1[0] = 1;
	a2[0] = 2;
	int ka = mpk_domain_key(A);
	REQUIRE(ka > 0);

	/* No key from the kernel, and A's second region cannot move. */
	mpk__test_fail(MPK_OS_FAIL_PKEY_ALLOC, -1, ENOSPC); /* every pkey_alloc */
	mpk__test_fail(MPK_OS_FAIL_MPROTECT, 2, ENOMEM);
	REQUIRE(C = mpk_domain_create("C", MPK_RW, 0));
	mpk__test_fail(MPK_OS_FAIL_MPROTECT, 0, 0);
	mpk__test_fail(MPK_OS_FAIL_PKEY_ALLOC, 0, 0);
	CHECK(mpk_domain_key(A) == ka);
	CHECK_ERR(mpk_domain_key(C), ENOENT);
	CHECK(mpk_get(A) == MPK_RW && mpk_get(C) == MPK_RW);
	CHECK(a1[0] == 1 && a2[0] == 2);
	a1[1] = a2[1] = 3;
	REQUIRE(c = mpk_alloc(C, 4096));
	c[0] = 4;
	REQUIRE(mpk_set(A, MPK_NONE) == 0);
	CHECK_FAULT(t_read_in_child(a1 + 5), A, a1 + 5);
	CHECK_FAULT(t_read_in_child(a2 + 5), A, a2 + 5);
	REQUIRE(mpk_set(A, MPK_RW) == 0);
	REQUIRE(mpk_set(C, MPK_NONE) == 0);
	CHECK_FAULT(t_read_in_child(c + 5), C, c + 5); /* keyless: ACCERR */

	/* C takes rights: A is evicted (both regions), then C's region
	 * cannot move to the key: C stays keyless. */
	mpk__test_fail(MPK_OS_FAIL_PKEY_ALLOC, -1, ENOSPC); /* every pkey_alloc */
	mpk__test_fail(MPK_OS_FAIL_MPROTECT, 3, EIO);
	CHECK(mpk_set(C, MPK_RW) == 0); /* soft rights still work */
	mpk__test_fail(MPK_OS_FAIL_MPROTECT, 0, 0);
	mpk__test_fail(MPK_OS_FAIL_PKEY_ALLOC, 0, 0);
	CHECK_ERR(mpk_domain_key(A), ENOENT);
	CHECK_ERR(mpk_domain_key(C), ENOENT);
	CHECK(mpk_get(A) == MPK_RW && mpk_get(C) == MPK_RW);
	CHECK(a1[1] == 3 && a2[1] == 3 && c[0] == 4);
	REQUIRE(mpk_set(C, MPK_NONE) == 0);
	CHECK_FAULT(t_write_in_child(c + 6), C, c + 6);
	REQUIRE(mpk_set(A, MPK_READ) == 0);
	CHECK(a2[1] == 3);
	CHECK_FAULT(t_write_in_child(a2 + 6), A, a2 + 6);

	/* Without failures C gets the key kept aside. */
	REQUIRE(mpk_set(C, MPK_READ) == 0);
	int kc = mpk_domain_key(C);
	CHECK(kc > 0);
	CHECK(c[0] == 4);
	CHECK_FAULT(t_write_in_child(c + 7), C, c + 7);
	CHECK(mpk_get(A) == MPK_READ && a1[0] == 1);
	return t_done();
}
