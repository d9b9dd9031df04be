/*
 * Attack: freeing a pointer into the middle of a live block, so that the
 * allocator takes part of it (and what follows) as a free block and hands
 * it out while the block's owner still uses it.  mpkit: the slot, the
 * run's offset or the region's start says where blocks begin, and the
 * keyed header at a 16-aligned interior pointer (the block's own data)
 * does not check: a wild pointer, reported with the call and a backtrace,
 * then abort.  With a handler that returns, the free fails and no block
 * allocated afterwards overlaps the live ones.
 */
#include "t_attack.h"

static mpk_heap *h;

static void free_it(void *p)
{
	mpk_heap_free(h, p);
}

int main(void)
{
	static const size_t sizes[] = { 200, 3000, 20000, 300000 };
	static const size_t offs[] = { 16, 32, 8, 1, 4096 };
	struct t_span keep[4];

	t_backend();
	mpk_domain *d = mpk_domain_create("attack-interior", MPK_RW, 0);
	REQUIRE(d && (h = mpk_heap_create(d, 0)));
	t_misuse_catch();
	for (int i = 0; i < 4; i++) {
		unsigned char *p = mpk_heap_malloc(h, sizes[i]);
		REQUIRE(p);
		memset(p, 0, sizes[i]); /* headers of zeros inside */
		keep[i] = (struct t_span){ p, sizes[i] };
		for (size_t k = 0; k < sizeof(offs) / sizeof(*offs); k++) {
			if (offs[k] >= sizes[i])
				continue;
			unsigned char *q = p + offs[k];
			if (k == 0)
				t_attack_reported(free_it, q, "wild pointer", q, "mpk_heap_free");
			CHECK_ERR(mpk_heap_free(h, q), EINVAL);
			CHECK_MISUSE(MPK_MISUSE_WILD, q);
			CHECK_ERR(mpk_heap_realloc(h, q, 10), EINVAL);
			CHECK_MISUSE(MPK_MISUSE_WILD, q);
		}
	}
	t_attack_sweep(h, keep, 4);
	for (int i = 0; i < 4; i++)
		CHECK(mpk_heap_free(h, (void *)keep[i].p) == 0);
	CHECK(t_misuses == 0);
	CHECK(mpk_heap_destroy(h) == 0 && mpk_domain_destroy(d) == 0);
	return t_done();
}
