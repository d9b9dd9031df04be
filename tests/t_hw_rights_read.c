/*
 * hw: MPK_READ lets the thread read a domain's memory; a write faults with
 * SEGV_PKUERR and si_pkey == the domain's key, at the address written.
 */
#include "t.h"

int main(void)
{
	int key;
	mpk_domain *d = t_hw_domain("rights-read", &key);
	unsigned char *p = mpk_alloc(d, 2 * 4096);
	REQUIRE(p);
	p[0] = 0x11;
	p[4096 + 17] = 0x22;

	REQUIRE(mpk_set(d, MPK_READ) == 0);
	CHECK(mpk_get(d) == MPK_READ);

	/* Allowed: reads, here and in a child that inherits this PKRU. */
	CHECK(((volatile unsigned char *)p)[0] == 0x11);
	CHECK(((volatile unsigned char *)p)[4096 + 17] == 0x22);
	CHECK_NO_FAULT(t_read_in_child(p));
	CHECK_NO_FAULT(t_read_in_child(p + 4096 + 17));

	/* Forbidden: writes, on both pages. */
	struct t_fault f = t_write_in_child(p + 3);
	CHECK_FAULT(f, d, p + 3);
	CHECK(f.code == SEGV_PKUERR && f.pkey == key);
	f = t_write_in_child(p + 4096 + 17);
	CHECK_FAULT(f, d, p + 4096 + 17);
	CHECK(f.code == SEGV_PKUERR && f.pkey == key);

	/* The faulting writes were not carried out. */
	CHECK(p[3] == 0 && p[4096 + 17] == 0x22);

	/* The same rights through a scope. */
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	MPK_WITH(d, MPK_READ) {
		CHECK(mpk_get(d) == MPK_READ);
		CHECK(((volatile unsigned char *)p)[0] == 0x11);
		CHECK_FAULT(t_write_in_child(p + 1), d, p + 1);
	}
	CHECK(mpk_get(d) == MPK_NONE);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
