/* mpk_info() agrees with the rest of the API and with itself: the backend
 * is mpk_backend()'s, the facts imply each other, forced means
 * MPKIT_BACKEND named one, domains and keys_in_use (hw; always 0 on soft)
 * follow creates and destroys, failed creates count nothing, and asking
 * twice gives the same answer. */
#include "t_state.h"

/* The same answer; the PKRU image only if nothing happened in between
 * (giving a key back closes it with other bits than the kernel's default,
 * equally closed). */
static void same_info(const struct mpk_info *a, const struct mpk_info *b, int pkru)
{
	CHECK(a->cpu_pku == b->cpu_pku && a->cpu_ospke == b->cpu_ospke);
	CHECK(a->kernel_pkeys == b->kernel_pkeys && a->backend == b->backend);
	CHECK(a->backend_forced == b->backend_forced);
	CHECK(a->keys_free == b->keys_free && a->key_budget == b->key_budget);
	CHECK(a->keys_in_use == b->keys_in_use && a->exec_only == b->exec_only);
	CHECK(a->pkru_valid == b->pkru_valid && a->domains == b->domains);
	CHECK(!pkru || !a->pkru_valid || a->pkru == b->pkru);
}

int main(void)
{
	struct mpk_info i, j;
	mpk_domain *d[3];

	REQUIRE(mpk_info(&i) == 0);
	int b = mpk_backend();
	CHECK(i.backend == b);
	CHECK(b == MPK_BACKEND_HW || b == MPK_BACKEND_SOFT);
	const char *name = mpk_backend_name(i.backend);
	CHECK(name && !strcmp(name, b == MPK_BACKEND_HW ? "hw" : "soft"));
	CHECK(!strcmp(mpk_backend_name(MPK_BACKEND_HW), "hw"));
	CHECK(!strcmp(mpk_backend_name(MPK_BACKEND_SOFT), "soft"));

	/* the facts */
	CHECK(!i.cpu_ospke || i.cpu_pku);
	CHECK(!i.kernel_pkeys || i.cpu_ospke);
	CHECK(!i.exec_only || i.kernel_pkeys);
	CHECK(!i.pkru_valid || i.cpu_ospke);
	CHECK(b != MPK_BACKEND_HW || i.kernel_pkeys);
	CHECK(i.keys_free >= 0 && i.keys_free <= 15);
	CHECK(i.kernel_pkeys || i.keys_free == 0);
	const char *env = getenv("MPKIT_BACKEND");
	int forced = env && *env && strcmp(env, "auto");
	CHECK(!!i.backend_forced == forced);
	if (!forced)
		CHECK(b == (i.kernel_pkeys ? MPK_BACKEND_HW : MPK_BACKEND_SOFT));
	const char *keys = getenv("MPKIT_KEYS");
	CHECK(i.key_budget == (keys && *keys ? atoi(keys) : 15));
	CHECK(i.domains == 0 && i.keys_in_use == 0);
	REQUIRE(mpk_info(&j) == 0);
	same_info(&i, &j, 1);

	/* counts follow creates */
	for (int k = 0; k < 3; k++) {
		d[k] = mpk_domain_create("info", MPK_NONE, 0);
		REQUIRE(d[k]);
		REQUIRE(mpk_info(&j) == 0);
		CHECK(j.domains == k + 1);
		if (b == MPK_BACKEND_HW) {
			CHECK(j.keys_in_use == k + 1);
			CHECK(j.keys_free == i.keys_free - (k + 1));
			CHECK(mpk_domain_key(d[k]) >= 1);
		} else {
			CHECK(j.keys_in_use == 0 && j.keys_free == i.keys_free);
		}
	}
	/* a failed create counts nothing */
	CHECK(mpk_domain_create("", MPK_NONE, 0) == NULL);
	REQUIRE(mpk_info(&j) == 0);
	CHECK(j.domains == 3);
	CHECK(j.keys_in_use == (b == MPK_BACKEND_HW ? 3 : 0));

	/* and destroys, in any order */
	CHECK(mpk_domain_destroy(d[1]) == 0);
	REQUIRE(mpk_info(&j) == 0);
	CHECK(j.domains == 2 && j.keys_in_use == (b == MPK_BACKEND_HW ? 2 : 0));
	CHECK(mpk_domain_destroy(d[0]) == 0);
	CHECK(mpk_domain_destroy(d[2]) == 0);
	REQUIRE(mpk_info(&j) == 0);
	CHECK(j.domains == 0 && j.keys_in_use == 0);
	CHECK(j.keys_free == i.keys_free);
	same_info(&i, &j, 0);
	return t_done();
}
