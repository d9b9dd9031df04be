/* mpk_free() takes only the start of a region of the domain given: NULL, a
 * pointer in no domain, in another domain, inside a region, or already
 * freed is EINVAL, and the region stays mapped, in its domain, with its
 * contents and its protection. */
#include "t_state.h"

int main(void)
{
	size_t page = t_page();
	static char data[64];
	char local;

	t_backend();
	mpk_domain *d = mpk_domain_create("free-d", MPK_RW, 0);
	mpk_domain *e = mpk_domain_create("free-e", MPK_RW, 0);
	REQUIRE(d && e);
	unsigned char *p = mpk_alloc(d, 3 * page);
	unsigned char *q = mpk_alloc(e, page);
	unsigned char *gone = mpk_alloc(d, page);
	REQUIRE(p && q && gone);
	t_fill(p, 3 * page, 5);
	t_fill(q, page, 6);
	REQUIRE(mpk_free(d, gone) == 0);
	REQUIRE(mpk_set(d, MPK_READ) == 0);
	REQUIRE(mpk_set(e, MPK_NONE) == 0);
	void *heap = malloc(64);
	REQUIRE(heap);

	unsigned long long mp = t_mprotects();

	CHECK_ERR(mpk_free(d, NULL), EINVAL);
	CHECK_ERR(mpk_free(NULL, p), EINVAL);
	CHECK_ERR(mpk_free(NULL, NULL), EINVAL);
	CHECK_ERR(mpk_free(d, heap), EINVAL);
	CHECK_ERR(mpk_free(d, data), EINVAL);
	CHECK_ERR(mpk_free(d, &local), EINVAL);
	CHECK_ERR(mpk_free(d, q), EINVAL);     /* e's region */
	CHECK_ERR(mpk_free(e, p), EINVAL);     /* d's region */
	CHECK_ERR(mpk_free(d, p + 1), EINVAL); /* inside */
	CHECK_ERR(mpk_free(d, p + page), EINVAL);
	CHECK_ERR(mpk_free(d, p + 3 * page - 1), EINVAL);
	CHECK_ERR(mpk_free(d, gone), EINVAL);  /* freed already */

	CHECK(t_mprotects() == mp);
	CHECK(mpk_domain_of(p) == d);
	CHECK(mpk_domain_of(p + 3 * page - 1) == d);
	CHECK(mpk_domain_of(q) == e);
	CHECK(t_intact(p, 3 * page, 5));
	CHECK_RIGHTS(d, p, MPK_READ);
	CHECK_RIGHTS(d, p + 2 * page, MPK_READ);
	CHECK_RIGHTS(e, q, MPK_NONE);
	REQUIRE(mpk_set(e, MPK_READ) == 0);
	CHECK(t_intact(q, page, 6));

	/* The right call still works. */
	CHECK(mpk_free(d, p) == 0);
	CHECK(mpk_free(e, q) == 0);
	free(heap);
	CHECK(mpk_domain_destroy(d) == 0);
	CHECK(mpk_domain_destroy(e) == 0);
	return t_done();
}
