/*
 * Domain memory lives in the reserved windows: every mpk_alloc() region,
 * heap chunk and vault block is inside a listed window, is its own VMA, and
 * has reserved PROT_NONE guard pages on both sides that no domain owns.
 * Lookups are exact at the edges: the first and last byte are the
 * domain's, the byte before and after are nobody's.  An adopted range is
 * outside the windows, listed as adopted while it lives, and found.
 */
#include "t_window.h"

static void edges(mpk_domain *d, unsigned char *p, size_t len)
{
	struct t_map m;
	size_t page = t_page();

	CHECK(t_listed(p, len, MPK_RANGE_WINDOW));
	CHECK(mpk_domain_of(p) == d);
	CHECK(mpk_domain_of(p + len - 1) == d);
	CHECK(mpk_domain_of(p + len / 2) == d);
	CHECK_ERR(mpk_domain_of(p - 1), ENOENT);
	CHECK_ERR(mpk_domain_of(p + len), ENOENT);
	CHECK_ERR(mpk_domain_of(p + len + page - 1), ENOENT);
	/* Its own VMA, exactly, between reserved guards. */
	REQUIRE(t_map_of(p, &m));
	CHECK(m.lo == (uintptr_t)p && m.hi == (uintptr_t)p + len);
	REQUIRE(t_map_of(p - 1, &m));
	CHECK(!strcmp(m.perms, "---p"));
	REQUIRE(t_map_of(p + len, &m));
	CHECK(!strcmp(m.perms, "---p"));
}

int main(void)
{
	size_t page = t_page();
	t_backend();
	mpk_domain *d = mpk_domain_create("edges", MPK_RW, 0);
	mpk_domain *e = mpk_domain_create("other", MPK_NONE, 0);
	REQUIRE(d && e);

	unsigned char *a = mpk_alloc(d, 1);
	unsigned char *b = mpk_alloc(e, 3 * page);
	unsigned char *c = mpk_alloc(d, 5 * page);
	REQUIRE(a && b && c);
	edges(d, a, page);
	edges(e, b, 3 * page); /* closed: must not merge with its guards either */
	edges(d, c, 5 * page);
	a[0] = 1;
	c[5 * page - 1] = 2;
	CHECK(a[0] == 1 && c[5 * page - 1] == 2);
	/* The guards fault, and belong to no domain. */
	struct t_fault f = t_write_in_child(a + page);
	CHECK(f.faulted && f.code == SEGV_ACCERR && f.where == a + page);
	CHECK_ERR(mpk_domain_of(a + page), ENOENT);

	/* Heaps and vaults too. */
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h);
	void *small = mpk_heap_malloc(h, 40), *big = mpk_heap_malloc(h, 3 << 20);
	REQUIRE(small && big);
	CHECK(t_listed(small, 40, MPK_RANGE_WINDOW) && t_listed(big, 3 << 20, MPK_RANGE_WINDOW));
	CHECK(mpk_domain_of(small) == d && mpk_domain_of(big) == d);
	void *s = mpk_secret_alloc(e, 32);
	REQUIRE(s);
	CHECK(t_listed(s, 32, MPK_RANGE_WINDOW) && mpk_domain_of(s) == e);

	/* Adopted: outside, listed as such, found; gone when freed. */
	uint64_t g = mpk__ranges_gen();
	unsigned char *m = t_map_anon(2);
	CHECK(!t_listed(m, 2 * page, MPK_RANGE_WINDOW) && !t_listed(m, 2 * page, MPK_RANGE_ADOPTED));
	REQUIRE(mpk_adopt(d, m, 2 * page) == 0);
	CHECK(mpk__ranges_gen() != g);
	CHECK(t_listed(m, 2 * page, MPK_RANGE_ADOPTED));
	CHECK(mpk_domain_of(m) == d && mpk_domain_of(m + 2 * page - 1) == d);
	CHECK(mpk_domain_of(m - 1) != d);
	/* Window memory cannot be adopted (it is mpkit's). */
	CHECK_ERR(mpk_adopt(e, a, page), EINVAL);
	CHECK(mpk_free(d, m) == 0);
	CHECK(!t_listed(m, 2 * page, MPK_RANGE_ADOPTED));
	CHECK_ERR(mpk_domain_of(m), ENOENT);

	/* A freed region's pages are reserved again and reused. */
	CHECK(mpk_free(d, a) == 0);
	CHECK_ERR(mpk_domain_of(a), ENOENT);
	CHECK(t_listed(a, page, MPK_RANGE_WINDOW));
	unsigned char *a2 = mpk_alloc(e, page);
	REQUIRE(a2);
	CHECK(a2 == a && mpk_domain_of(a2) == e);

	mpk_secret_free(s);
	CHECK(mpk_heap_destroy(h) == 0);
	CHECK(mpk_domain_destroy(d) == 0 && mpk_domain_destroy(e) == 0);
	CHECK_ERR(mpk_domain_of(c), ENOENT);
	CHECK_ERR(mpk_domain_of(b), ENOENT);
	return t_done();
}
