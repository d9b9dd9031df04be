/* A domain's memory: allowed access succeeds, forbidden access faults. */
#include "t.h"

int main(void)
{
	t_backend();
	mpk_domain *d = mpk_domain_create("smoke", MPK_RW, 0);
	REQUIRE(d);
	unsigned char *p = mpk_alloc(d, 100);
	REQUIRE(p);
	CHECK(p[0] == 0 && p[99] == 0); /* zeroed */
	p[0] = 7;
	CHECK_NO_FAULT(t_write_in_child(p));

	REQUIRE(mpk_set(d, MPK_READ) == 0);
	CHECK(mpk_get(d) == MPK_READ);
	CHECK(p[0] == 7);
	CHECK_NO_FAULT(t_read_in_child(p));
	CHECK_FAULT(t_write_in_child(p + 5), d, p + 5);

	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	CHECK(mpk_get(d) == MPK_NONE);
	CHECK_FAULT(t_read_in_child(p + 9), d, p + 9);

	REQUIRE(mpk_set(d, MPK_RW) == 0);
	p[1] = 1;
	CHECK(p[1] == 1);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
