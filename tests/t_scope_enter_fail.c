/* A failed mpk_enter() (bad rights or bad domain) returns saved == -1 with
 * errno EINVAL and changes no rights; leaving that scope is a no-op that
 * succeeds, however often, and changes no rights either. */
#include "t_state.h"

int main(void)
{
	const int bad[] = { 2, 4, -1, 100 };
	const int states[] = { MPK_NONE, MPK_READ, MPK_RW };

	t_backend();
	mpk_domain *d = mpk_domain_create("enter-fail", MPK_NONE, 0);
	REQUIRE(d);
	unsigned char *p = mpk_alloc(d, t_page());
	REQUIRE(p);

	for (size_t s = 0; s < sizeof(states) / sizeof(*states); s++) {
		REQUIRE(mpk_set(d, states[s]) == 0);
		unsigned long long mp = t_mprotects();
		for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
			errno = 0;
			mpk_scope sc = mpk_enter(d, bad[i]);
			if (sc.saved != -1 || errno != EINVAL)
				t_fail("holding %d, enter %d: saved %d errno %d",
				       states[s], bad[i], sc.saved, errno);
			CHECK(mpk_get(d) == states[s]);
			CHECK(mpk_leave(&sc) == 0);
			CHECK(mpk_leave(&sc) == 0);
			CHECK(mpk_get(d) == states[s]);
		}
		errno = 0;
		mpk_scope sn = mpk_enter(NULL, MPK_RW);
		CHECK(sn.saved == -1 && errno == EINVAL);
		CHECK(mpk_leave(&sn) == 0);
		CHECK(t_mprotects() == mp);
		CHECK_RIGHTS(d, p, states[s]);
	}

	/* Inside a good scope a failed one neither restores nor spoils the
	 * outer scope's saved rights. */
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	mpk_scope outer = mpk_enter(d, MPK_RW);
	mpk_scope bad_one = mpk_enter(d, 2);
	CHECK(bad_one.saved == -1);
	CHECK(mpk_leave(&bad_one) == 0);
	CHECK_RIGHTS(d, p, MPK_RW);
	CHECK(mpk_leave(&outer) == 0);
	CHECK_RIGHTS(d, p, MPK_NONE);

	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
