/* MPKIT_BACKEND=auto, empty or unset: hw where the machine has keys, soft
 * where it has none, not counted as forced; and it works. */
#include "t_env.h"

static void check_auto(void *arg)
{
	struct mpk_info i;
	int want = t_machine_has_keys() ? MPK_BACKEND_HW : MPK_BACKEND_SOFT;

	(void)arg;
	CHECK(mpk_init() == 0);
	CHECK(mpk_backend() == want);
	REQUIRE(mpk_info(&i) == 0);
	CHECK(i.backend == want && !i.backend_forced);

	mpk_domain *d = mpk_domain_create("env-auto", MPK_RW, 0);
	REQUIRE(d);
	unsigned char *p = mpk_alloc(d, 1);
	REQUIRE(p);
	if (want == MPK_BACKEND_HW)
		CHECK(mpk_domain_key(d) >= 1);
	else
		CHECK_ERR(mpk_domain_key(d), ENOENT);
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	CHECK_FAULT(t_read_in_child(p), d, p);
	CHECK(mpk_domain_destroy(d) == 0);
}

int main(void)
{
	T_IN_CHILD(check_auto, NULL, "auto", NULL);
	T_IN_CHILD(check_auto, NULL, "", NULL);
	T_IN_CHILD(check_auto, NULL, NULL, NULL);
	return t_done();
}
