/* mpk_free() unmaps exactly the region given (allocated or adopted): the
 * address belongs to no domain; an allocated region is reserved PROT_NONE
 * again (SEGV_ACCERR), an adopted one is no mapping any more (SEGV_MAPERR);
 * the domain's other regions keep contents and rights. */
#include "t_state.h"

int main(void)
{
	size_t page = t_page();

	t_backend();
	mpk_domain *d = mpk_domain_create("free", MPK_RW, 0);
	REQUIRE(d);
	unsigned char *p = mpk_alloc(d, 2 * page);
	unsigned char *q = mpk_alloc(d, page);
	unsigned char *m = t_map_anon(2);
	REQUIRE(p && q);
	REQUIRE(mpk_adopt(d, m, 2 * page) == 0);
	t_fill(p, 2 * page, 10);
	t_fill(q, page, 11);
	t_fill(m, 2 * page, 12);
	REQUIRE(mpk_set(d, MPK_READ) == 0);

	/* An allocated region. */
	CHECK(mpk_free(d, p) == 0);
	struct t_fault f = t_read_in_child(p + page);
	CHECK(f.faulted && f.code == SEGV_ACCERR && f.where == p + page);
	CHECK(!t_any_usable(p, 2 * page));
	CHECK_ERR(mpk_domain_of(p), ENOENT);
	CHECK_ERR(mpk_domain_of(p + 2 * page - 1), ENOENT);

	/* An adopted region. */
	CHECK(mpk_free(d, m) == 0);
	f = t_read_in_child(m);
	CHECK(f.faulted && f.code == SEGV_MAPERR && f.where == m);
	CHECK(!t_any_usable(m, 2 * page));
	CHECK_ERR(mpk_domain_of(m + page), ENOENT);

	/* The rest of the domain is as it was. */
	CHECK(mpk_domain_of(q) == d);
	CHECK(t_intact(q, page, 11));
	CHECK_RIGHTS(d, q, MPK_READ);
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	CHECK_RIGHTS(d, q + page - 1, MPK_NONE);
	CHECK(mpk_free(d, q) == 0);
	CHECK_ERR(mpk_domain_of(q), ENOENT);

	/* A domain without regions still works. */
	unsigned char *n = mpk_alloc(d, 1);
	REQUIRE(n);
	CHECK_RIGHTS(d, n, MPK_NONE);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
