/*
 * Soft backend: mpk_rights_restore() and mpk_set_all() are all or nothing.
 * With an mprotect() failure injected in the middle (the test-only hook
 * mpk__test_fail() in src/core/os.c), the call fails with the injected
 * errno and every domain keeps its rights and its protection (reads fault
 * in a child, SEGV_ACCERR at the address); without it the same call
 * succeeds and the accesses are allowed.
 */
#include "t.h"
#include "../src/core/testing.h"

static mpk_domain *d[2];
static unsigned char *m[2][2];

static void all_closed(void)
{
	for (int i = 0; i < 2; i++) {
		CHECK(mpk_get(d[i]) == MPK_NONE);
		for (int j = 0; j < 2; j++)
			CHECK_FAULT(t_read_in_child(m[i][j] + 9), d[i], m[i][j] + 9);
	}
}

int main(void)
{
	mpk_rights_t open2;

	t_force_soft();
	for (int i = 0; i < 2; i++) {
		REQUIRE(d[i] = mpk_domain_create(i ? "aon-1" : "aon-0", MPK_RW, 0));
		for (int j = 0; j < 2; j++) {
			REQUIRE(m[i][j] = mpk_alloc(d[i], 4096));
			m[i][j][9] = (unsigned char)(10 * i + j);
		}
	}
	REQUIRE(mpk_rights_save(&open2) == 0);
	REQUIRE(mpk_set(d[0], MPK_NONE) == 0);
	REQUIRE(mpk_set(d[1], MPK_NONE) == 0);
	all_closed();

	/* Restore: d0's two regions open, then d1's first fails. */
	mpk__test_fail(MPK_OS_FAIL_MPROTECT, 3, ENOMEM);
	CHECK_ERR(mpk_rights_restore(&open2), ENOMEM);
	mpk__test_fail(MPK_OS_FAIL_MPROTECT, 0, 0);
	all_closed();

	/* set_all: the second region of d0 fails. */
	mpk__test_fail(MPK_OS_FAIL_MPROTECT, 2, EACCES);
	CHECK_ERR(mpk_set_all(d[0], MPK_READ), EACCES);
	mpk__test_fail(MPK_OS_FAIL_MPROTECT, 0, 0);
	all_closed();

	/* Without failures both work. */
	REQUIRE(mpk_rights_restore(&open2) == 0);
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++) {
			CHECK(m[i][j][9] == 10 * i + j);
			m[i][j][10] = 1;
		}
	REQUIRE(mpk_set_all(d[0], MPK_READ) == 0);
	CHECK(mpk_get(d[0]) == MPK_READ);
	CHECK(m[0][1][9] == 1);
	CHECK_FAULT(t_write_in_child(m[0][1] + 11), d[0], m[0][1] + 11);
	mpk_rights_dispose(&open2);
	return t_done();
}
