/*
 * hw: mpk_set_key_budget(2) lets mpkit hold two keys; a third domain
 * created without rights gets no key (virtual domains) and changes nothing.  Lowering the budget below the
 * keys held fails with EBUSY and leaves the budget as it was.
 */
#include "t.h"

int main(void)
{
	struct mpk_info in;

	t_need_hw();
	REQUIRE(mpk_set_key_budget(2) == 0);
	REQUIRE(mpk_info(&in) == 0);
	CHECK(in.key_budget == 2);
	int free0 = in.keys_free;

	mpk_domain *a = mpk_domain_create("budget-a", MPK_RW, 0);
	mpk_domain *b = mpk_domain_create("budget-b", MPK_RW, 0);
	REQUIRE(a && b);
	CHECK_KEYLESS_CREATE("budget-c");
	REQUIRE(mpk_info(&in) == 0);
	CHECK(in.keys_in_use == 2 && in.domains == 2);
	CHECK(in.keys_free == free0 - 2); /* the kernel still has keys */

	/* a and b still work. */
	unsigned char *p = mpk_alloc(a, 4096);
	REQUIRE(p);
	p[0] = 1;
	REQUIRE(mpk_set(a, MPK_NONE) == 0);
	CHECK_FAULT(t_read_in_child(p), a, p);

	/* Below what is held: EBUSY, nothing changes. */
	CHECK_ERR(mpk_set_key_budget(1), EBUSY);
	REQUIRE(mpk_info(&in) == 0);
	CHECK(in.key_budget == 2);
	CHECK_KEYLESS_CREATE("budget-c");

	/* Equal to what is held is fine; after a destroy, lower works. */
	CHECK(mpk_set_key_budget(2) == 0);
	REQUIRE(mpk_domain_destroy(b) == 0);
	CHECK(mpk_set_key_budget(1) == 0);
	CHECK_KEYLESS_CREATE("budget-c");
	CHECK(mpk_set_key_budget(3) == 0);
	mpk_domain *c = mpk_domain_create("budget-c", MPK_RW, 0);
	mpk_domain *e = mpk_domain_create("budget-e", MPK_RW, 0);
	CHECK(c && e);
	CHECK_KEYLESS_CREATE("budget-f");
	REQUIRE(mpk_info(&in) == 0);
	CHECK(in.keys_in_use == 3 && in.key_budget == 3);
	return t_done();
}
