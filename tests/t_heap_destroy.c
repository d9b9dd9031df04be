/*
 * mpk_heap_destroy() releases everything: every block of every kind (and
 * a guarded block's guard pages) is unmapped, the other heaps of the domain
 * keep theirs, and the domain, which refused to go while a heap used it
 * (EBUSY, nothing changed), can then be destroyed.  The destroyed handle is
 * refused by every call (EINVAL), while other heaps live and after the last.
 */
#include "t_heap.h"

int main(void)
{
	size_t page = t_page();

	t_backend();
	mpk_domain *d = mpk_domain_create("heap-destroy", MPK_RW, 0);
	REQUIRE(d);
	mpk_heap *h = mpk_heap_create(d, 0);
	mpk_heap *g = mpk_heap_create(d, MPK_HEAP_GUARDED);
	mpk_heap *other = mpk_heap_create(d, 0);
	REQUIRE(h && g && other);
	unsigned char *small = mpk_heap_malloc(h, 32);
	unsigned char *run = mpk_heap_malloc(h, 40000);
	unsigned char *big = mpk_heap_malloc(h, 3 << 20);
	unsigned char *gb = mpk_heap_malloc(g, 5000);
	unsigned char *kept = mpk_heap_malloc(other, 32);
	REQUIRE(small && run && big && gb && kept);
	t_fill(kept, 32, 4);
	unsigned char *gbase = (unsigned char *)((uintptr_t)gb & ~(page - 1)) - page;
	unsigned char *gend = (unsigned char *)(((uintptr_t)gb + 5000 + page - 1) & ~(page - 1));
	CHECK(t_any_mapped(gbase, page) && t_any_mapped(gend, page)); /* the guards */

	int domains = t_domains();
	CHECK_ERR(mpk_domain_destroy(d), EBUSY);
	CHECK(t_domains() == domains);
	CHECK(mpk_domain_of(small) == d && t_intact(kept, 32, 4));
	CHECK(t_any_mapped(big, 3 << 20));

	CHECK(mpk_heap_destroy(h) == 0);
	CHECK(mpk_heap_destroy(g) == 0);
	CHECK(!t_any_usable(small, 32));
	CHECK(!t_any_usable(run, 40000));
	CHECK(!t_any_usable(big, 3 << 20));
	CHECK(!t_any_usable(gbase, gend + page - gbase));
	CHECK(t_intact(kept, 32, 4));
	t_heap_refused(h);
	t_heap_refused(g);

	CHECK_ERR(mpk_domain_destroy(d), EBUSY); /* other still uses it */
	CHECK(mpk_heap_free(other, kept) == 0);
	CHECK(mpk_heap_destroy(other) == 0);
	t_heap_refused(other); /* the metadata area went with the last heap */
	t_heap_refused(h);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
