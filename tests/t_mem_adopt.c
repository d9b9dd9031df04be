/* mpk_adopt() keeps the memory's contents and puts exactly the adopted
 * pages under the domain's rights: closed, they fault; the pages around
 * them, from the same mapping, stay the caller's and stay open. */
#include "t_state.h"

int main(void)
{
	size_t page = t_page();

	t_backend();
	mpk_domain *d = mpk_domain_create("adopt", MPK_RW, 0);
	REQUIRE(d);
	unsigned char *m = t_map_anon(5);
	t_fill(m, 5 * page, 13);

	/* Pages 1..3 of a five-page mapping, into an open domain. */
	unsigned char *a = m + page;
	CHECK(mpk_adopt(d, a, 3 * page) == 0);
	CHECK(t_intact(m, 5 * page, 13));
	CHECK(mpk_domain_of(a) == d);
	CHECK(mpk_domain_of(a + 3 * page - 1) == d);
	CHECK_ERR(mpk_domain_of(m), ENOENT);
	CHECK_ERR(mpk_domain_of(m + 4 * page), ENOENT);
	CHECK_RIGHTS(d, a, MPK_RW);

	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	CHECK_RIGHTS(d, a, MPK_NONE);
	CHECK_RIGHTS(d, a + page + 17, MPK_NONE);
	CHECK_RIGHTS(d, a + 3 * page - 1, MPK_NONE);
	/* the neighbours are not the domain's business */
	CHECK_NO_FAULT(t_write_in_child(m + page - 1));
	CHECK_NO_FAULT(t_write_in_child(m + 4 * page));
	CHECK(t_intact(m, page, 13));

	REQUIRE(mpk_set(d, MPK_READ) == 0);
	CHECK_RIGHTS(d, a + 2 * page, MPK_READ);
	CHECK(t_intact(m, 5 * page, 13));
	REQUIRE(mpk_set(d, MPK_RW) == 0);
	a[0] = 0xab;
	CHECK(a[0] == 0xab);

	/* Into a closed domain: closed at once, contents kept. */
	mpk_domain *e = mpk_domain_create("adopt-closed", MPK_NONE, 0);
	REQUIRE(e);
	unsigned char *n = t_map_anon(2);
	t_fill(n, 2 * page, 14);
	CHECK(mpk_adopt(e, n, 2 * page) == 0);
	CHECK_RIGHTS(e, n + page, MPK_NONE);
	REQUIRE(mpk_set(e, MPK_READ) == 0);
	CHECK(t_intact(n, 2 * page, 14));
	CHECK_RIGHTS(e, n, MPK_READ);

	/* Two mappings side by side, adopted as one range.  MAP_NORESERVE
	 * keeps the kernel from merging them into one. */
	unsigned char *two = t_map_anon(4);
	REQUIRE(mmap(two + 2 * page, 2 * page, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) ==
		two + 2 * page);
	t_fill(two, 4 * page, 15);
	struct t_map tm;
	REQUIRE(t_map_of(two, &tm));
	if (tm.hi != (unsigned long)(two + 2 * page))
		printf("note: the two mappings were merged into one\n");
	CHECK(mpk_adopt(e, two, 4 * page) == 0);
	CHECK(mpk_domain_of(two + 4 * page - 1) == e);
	CHECK(t_intact(two, 4 * page, 15));
	REQUIRE(mpk_set(e, MPK_NONE) == 0);
	CHECK_RIGHTS(e, two + page, MPK_NONE);
	CHECK_RIGHTS(e, two + 3 * page, MPK_NONE);

	CHECK(mpk_domain_destroy(d) == 0);
	CHECK(mpk_domain_destroy(e) == 0);
	CHECK(!t_any_mapped(two, 4 * page));
	/* destroy unmapped the adopted pages only */
	CHECK(!t_any_mapped(a, 3 * page));
	CHECK(t_intact(m, page, 13));
	CHECK(t_intact(m + 4 * page, page, 13 + (unsigned)(4 * page * 31)));
	munmap(m, page);
	munmap(m + 4 * page, page);
	return t_done();
}
