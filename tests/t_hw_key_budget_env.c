/* hw: MPKIT_KEYS=3 caps the keys mpkit takes: a fourth domain gets no key. */
#include "t.h"

int main(void)
{
	struct mpk_info in;
	mpk_domain *d[3];

	setenv("MPKIT_KEYS", "3", 1); /* read at initialisation */
	t_need_hw();
	REQUIRE(mpk_info(&in) == 0);
	CHECK(in.key_budget == 3);
	CHECK(in.keys_free >= 4); /* the kernel could give more */
	for (int i = 0; i < 3; i++) {
		char name[16];
		snprintf(name, sizeof(name), "env-%d", i);
		REQUIRE(d[i] = mpk_domain_create(name, MPK_RW, 0));
	}
	CHECK_KEYLESS_CREATE("env-3");
	REQUIRE(mpk_info(&in) == 0);
	CHECK(in.keys_in_use == 3 && in.domains == 3);
	CHECK_ERR(mpk_set_key_budget(2), EBUSY);
	REQUIRE(mpk_domain_destroy(d[1]) == 0);
	REQUIRE(d[1] = mpk_domain_create("env-1b", MPK_RW, 0));
	CHECK_KEYLESS_CREATE("env-4");
	return t_done();
}
