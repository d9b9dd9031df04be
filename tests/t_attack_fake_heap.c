/*
 * Attack: a heap handle of the attacker's, vouched for by a region forged
 * in the core's record.  A heap call takes its handle from the program's
 * memory (the drop-in's is a global), and with the metadata sealed checks
 * that it lies in the heap-meta area before it opens the area and uses it.
 * That check asked the core's record of the area's regions, which is
 * writable data: the attacker builds a heap in a page of its own (its
 * magic read from the source), appends to the core's list of adopted
 * regions (src/core/region.c: `aset`, `an`, found through the symbol
 * table) a region over that page in the heap-meta domain, whose handle it
 * reads from the seal page, and calls the heap functions with its page:
 * they took it for a heap, with the metadata open, and went on with the
 * arenas it says.  They must refuse it (EINVAL), as the seal page's
 * ranges, read-only while sealed, say: the page is not the area's; and
 * the real heap must still work.  Sealed; both backends.
 */
#include <stddef.h>

#include "t_attack.h"
#include "../src/heap/heap.h" /* the heap's and the seal page's shapes */

/* src/core/internal.h's region and region.c's set of adopted regions */
struct region {
	uintptr_t start;
	size_t len, cap;
	mpk_domain *domain;
	void *next, *pprev;
	bool owned, sealed, exec, secret;
	uint32_t reg;
};
struct set {
	size_t cap;
	struct region *r[4];
};

static unsigned char fake[2 << 20] __attribute__((aligned(4096)));
static struct region forged;
static struct set forged_set = { 4, { &forged } };

static void attack(void *arg)
{
	struct t_obj seal, an, aset;
	mpk_domain *d;
	mpk_heap *h;

	(void)arg;
	REQUIRE((d = mpk_domain_create("attack-fake-heap", MPK_RW, 0)) != NULL);
	REQUIRE((h = mpk_heap_create(d, 0)) != NULL);
	void *live = mpk_heap_malloc(h, 64);
	REQUIRE(live);

	REQUIRE(t_attack_heap_symbol("mpk__seal_pg", &seal));
	mpk_domain *meta = ((const union mpk__seal_page *)seal.at)->s.dom;
	REQUIRE(meta);
	if (!t_attack_symbol("region.c", "an", &an) || !t_attack_symbol("region.c", "aset", &aset))
		t_fail("the core's adopted regions not found in the symbol table");
	struct heap *fh = (struct heap *)fake;
	fh->magic = HEAP_MAGIC; /* the rest zero: no flags, arenas of zeros */
	fh->narenas = 1;
	forged = (struct region){ (uintptr_t)fake, sizeof(fake), sizeof(fake), meta };
	size_t n = *(size_t *)an.at;
	struct set *old = *(struct set **)aset.at;
	for (size_t i = 0; old && i < n && i < 3; i++)
		forged_set.r[i + 1] = old->r[i];
	if (n > 3)
		t_skip("more adopted regions than the forged set holds");
	*(struct set **)aset.at = &forged_set; /* the attacker's writes */
	*(size_t *)an.at = n + 1;
	if (mpk_domain_of(fake) != meta)
		t_fail("the forged region is not in the core's record");

	errno = 0;
	void *p = mpk_heap_malloc((mpk_heap *)fake, 32);
	if (p || errno != EINVAL)
		t_fail("a heap in the attacker's page was taken: malloc gave %p (errno %d)", p, errno);
	CHECK_ERR(mpk_heap_free((mpk_heap *)fake, live), EINVAL);
	CHECK_ERR(mpk_heap_destroy((mpk_heap *)fake), EINVAL);

	*(size_t *)an.at = n; /* put back, for the heap's own calls */
	*(struct set **)aset.at = old;
	struct t_span keep = { live, 64 };
	t_attack_sweep(h, &keep, 1);
	CHECK(mpk_heap_free(h, live) == 0);
}

int main(void)
{
	t_setenv("MPKIT_HEAP_META", "closed");
	struct t_child c = t_child(attack, NULL, T_CHILD_CHECKS | T_CHILD_STDERR);
	if (c.exit_code)
		t_fail("the child ended with %d:\n%s", c.exit_code, c.err ? c.err : "");
	t_child_free(&c);
	t_setenv("MPKIT_HEAP_META", NULL);
	return t_done();
}
