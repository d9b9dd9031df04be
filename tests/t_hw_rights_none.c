/*
 * hw: MPK_NONE denies reads and writes; each faults with SEGV_PKUERR and
 * si_pkey == the domain's key, at the address touched.
 */
#include "t.h"

int main(void)
{
	int key;
	mpk_domain *d = t_hw_domain("rights-none", &key);
	unsigned char *p = mpk_alloc(d, 3 * 4096);
	REQUIRE(p);
	p[2 * 4096 + 5] = 0x33;

	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	CHECK(mpk_get(d) == MPK_NONE);

	struct t_fault f = t_read_in_child(p);
	CHECK_FAULT(f, d, p);
	CHECK(f.code == SEGV_PKUERR && f.pkey == key);
	f = t_read_in_child(p + 2 * 4096 + 5);
	CHECK_FAULT(f, d, p + 2 * 4096 + 5);
	CHECK(f.code == SEGV_PKUERR && f.pkey == key);
	f = t_write_in_child(p + 4096 + 9);
	CHECK_FAULT(f, d, p + 4096 + 9);
	CHECK(f.code == SEGV_PKUERR && f.pkey == key);

	/* Reopened: the data is intact and the denied write did not land. */
	REQUIRE(mpk_set(d, MPK_READ) == 0);
	CHECK(p[2 * 4096 + 5] == 0x33 && p[4096 + 9] == 0);

	/* A scope closing it again. */
	MPK_WITH(d, MPK_NONE) {
		CHECK(mpk_get(d) == MPK_NONE);
		CHECK_FAULT(t_read_in_child(p + 7), d, p + 7);
	}
	CHECK(mpk_get(d) == MPK_READ);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
