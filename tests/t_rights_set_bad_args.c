/* mpk_set() and mpk_get() reject a bad domain or rights value with EINVAL,
 * and a rejected mpk_set() leaves the rights as they were, in every state
 * (nothing opened, nothing closed, no mprotect). */
#include <limits.h>

#include "t_state.h"

int main(void)
{
	size_t page = t_page();
	const int bad[] = { 2, 4, -1, 100, 7, INT_MIN, INT_MAX };
	const int states[] = { MPK_NONE, MPK_READ, MPK_RW };

	t_backend();
	mpk_domain *d = mpk_domain_create("rights", MPK_RW, 0);
	REQUIRE(d);
	unsigned char *p = mpk_alloc(d, page);
	REQUIRE(p);
	t_fill(p, page, 9);

	CHECK_ERR(mpk_get(NULL), EINVAL);
	CHECK_ERR(mpk_set(NULL, MPK_RW), EINVAL);
	CHECK_ERR(mpk_set(NULL, MPK_NONE), EINVAL);
	CHECK_ERR(mpk_set(NULL, 2), EINVAL);

	for (size_t s = 0; s < sizeof(states) / sizeof(*states); s++) {
		REQUIRE(mpk_set(d, states[s]) == 0);
		unsigned long long mp = t_mprotects();
		for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
			CHECK_ERR_CASE(mpk_set(d, bad[i]), EINVAL, "holding %d, set %d",
				       states[s], bad[i]);
			int got = mpk_get(d);
			if (got != states[s])
				t_fail("holding %d, set %d: now %d", states[s], bad[i], got);
		}
		CHECK(t_mprotects() == mp);
		CHECK_RIGHTS(d, p, states[s]);
		CHECK_RIGHTS(d, p + page - 1, states[s]);
	}
	REQUIRE(mpk_set(d, MPK_READ) == 0);
	CHECK(t_intact(p, page, 9));
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
