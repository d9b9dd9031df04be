/* MPKIT_KEYS=N (1..15) sets the key budget mpk_info reports; on hw mpkit
 * then takes at most N keys: one domain more gets no key (virtual domains) and changes
 * nothing, until a key is given back or the budget raised.  Empty means
 * the default, 15.  On soft the budget binds nothing. */
#include "t_env.h"

static void budget(void *arg)
{
	const char *v = arg;
	struct mpk_info i;
	int n = v && *v ? atoi(v) : 15;
	mpk_domain *d[16];

	REQUIRE(mpk_init() == 0);
	REQUIRE(mpk_info(&i) == 0);
	CHECK(i.key_budget == n);
	if (n > 3 || mpk_backend() != MPK_BACKEND_HW) {
		/* soft: no keys, no limit */
		if (mpk_backend() == MPK_BACKEND_SOFT) {
			for (int k = 0; k < 16; k++)
				REQUIRE((d[k] = mpk_domain_create("soft", MPK_NONE, 0)));
			REQUIRE(mpk_info(&i) == 0);
			CHECK(i.keys_in_use == 0 && i.domains == 16);
			for (int k = 0; k < 16; k++)
				CHECK(mpk_domain_destroy(d[k]) == 0);
		}
		return;
	}
	for (int k = 0; k < n; k++)
		REQUIRE((d[k] = mpk_domain_create("budget", MPK_NONE, 0)));
	CHECK_KEYLESS_CREATE("one-too-many");
	REQUIRE(mpk_info(&i) == 0);
	CHECK(i.keys_in_use == n && i.domains == n);
	/* a key given back can be taken again */
	CHECK(mpk_domain_destroy(d[0]) == 0);
	CHECK((d[0] = mpk_domain_create("again", MPK_NONE, 0)) != NULL);
	/* a higher budget lets one more in */
	CHECK(mpk_set_key_budget(n + 1) == 0);
	CHECK((d[n] = mpk_domain_create("raised", MPK_NONE, 0)) != NULL);
	REQUIRE(mpk_info(&i) == 0);
	CHECK(i.key_budget == n + 1 && i.keys_in_use == n + 1);
	for (int k = 0; k <= n; k++)
		CHECK(!d[k] || mpk_domain_destroy(d[k]) == 0);
}

int main(void)
{
	const char *values[] = { "1", "2", "3", "15", "" };
	const char *backend = getenv("MPKIT_BACKEND");

	for (size_t i = 0; i < sizeof(values) / sizeof(*values); i++)
		T_IN_CHILD(budget, values[i], backend, values[i]);
	return t_done();
}
