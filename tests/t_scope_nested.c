/* mpk_enter()/mpk_leave() nest: each leave, in reverse order, restores
 * exactly what the matching enter found, also when one domain is entered
 * several times with different rights, and scopes on two domains do not
 * disturb each other. */
#include "t_state.h"

int main(void)
{
	size_t page = t_page();

	t_backend();
	mpk_domain *d = mpk_domain_create("nest-d", MPK_NONE, 0);
	mpk_domain *e = mpk_domain_create("nest-e", MPK_RW, 0);
	REQUIRE(d && e);
	unsigned char *p = mpk_alloc(d, page);
	unsigned char *q = mpk_alloc(e, page);
	REQUIRE(p && q);

	mpk_scope s1 = mpk_enter(d, MPK_READ);
	CHECK(s1.domain == d && s1.saved == MPK_NONE);
	CHECK_RIGHTS(d, p, MPK_READ);
	mpk_scope s2 = mpk_enter(d, MPK_RW);
	CHECK(s2.domain == d && s2.saved == MPK_READ);
	CHECK_RIGHTS(d, p, MPK_RW);
	mpk_scope s3 = mpk_enter(d, MPK_NONE);
	CHECK(s3.saved == MPK_RW);
	CHECK_RIGHTS(d, p, MPK_NONE);
	mpk_scope s4 = mpk_enter(d, MPK_NONE); /* the same rights again */
	CHECK(s4.saved == MPK_NONE);
	mpk_scope s5 = mpk_enter(d, MPK_RW);
	CHECK(s5.saved == MPK_NONE);
	CHECK_RIGHTS(d, p, MPK_RW);

	CHECK(mpk_leave(&s5) == 0);
	CHECK_RIGHTS(d, p, MPK_NONE);
	CHECK(mpk_leave(&s4) == 0);
	CHECK_RIGHTS(d, p, MPK_NONE);
	CHECK(mpk_leave(&s3) == 0);
	CHECK_RIGHTS(d, p, MPK_RW);
	CHECK(mpk_leave(&s2) == 0);
	CHECK_RIGHTS(d, p, MPK_READ);
	CHECK(mpk_leave(&s1) == 0);
	CHECK_RIGHTS(d, p, MPK_NONE);

	/* Interleaved scopes on two domains. */
	mpk_scope a = mpk_enter(d, MPK_RW);
	mpk_scope b = mpk_enter(e, MPK_READ);
	CHECK(a.saved == MPK_NONE && b.saved == MPK_RW);
	CHECK_RIGHTS(d, p, MPK_RW);
	CHECK_RIGHTS(e, q, MPK_READ);
	mpk_scope c = mpk_enter(d, MPK_READ);
	CHECK(c.saved == MPK_RW);
	CHECK(mpk_leave(&c) == 0);
	CHECK_RIGHTS(d, p, MPK_RW);
	CHECK_RIGHTS(e, q, MPK_READ);
	CHECK(mpk_leave(&b) == 0);
	CHECK_RIGHTS(e, q, MPK_RW);
	CHECK_RIGHTS(d, p, MPK_RW);
	CHECK(mpk_leave(&a) == 0);
	CHECK_RIGHTS(d, p, MPK_NONE);
	CHECK_RIGHTS(e, q, MPK_RW);

	/* A scope restores what was held at enter, even if mpk_set() changed
	 * the rights inside it. */
	mpk_scope t = mpk_enter(d, MPK_READ);
	REQUIRE(mpk_set(d, MPK_RW) == 0);
	CHECK(mpk_leave(&t) == 0);
	CHECK_RIGHTS(d, p, MPK_NONE);

	CHECK(mpk_domain_destroy(d) == 0);
	CHECK(mpk_domain_destroy(e) == 0);
	return t_done();
}
