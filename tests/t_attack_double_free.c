/*
 * Attack: double free (how2heap's fastbin_dup / tcache_dup).  Freed twice,
 * a block would sit twice in a free list and be handed out to two owners.
 * mpkit: a block in a thread's cache has its header check flipped with a
 * per-heap key, a block back in its slab is free in the bitmap, so the
 * second free is named a double free (report: the block, the call, a
 * backtrace; then abort).  With a handler that returns, the free fails
 * and the block is in no list twice: blocks allocated afterwards never
 * overlap.  Also with the block's live header written back over the
 * flipped one before the second free (the way round glibc's tcache key
 * check): that free is taken, but the block is not handed out twice.
 */
#include "t_attack.h"

static mpk_heap *h;

static void free_it(void *p)
{
	mpk_heap_free(h, p);
}

int main(void)
{
	struct t_span keep[2];

	t_backend();
	mpk_domain *d = mpk_domain_create("attack-df", MPK_RW, 0);
	REQUIRE(d && (h = mpk_heap_create(d, 0)));

	/* a, b, a: the second free of a is caught, by default an abort */
	void *a = mpk_heap_malloc(h, 40), *b = mpk_heap_malloc(h, 40);
	REQUIRE(a && b);
	CHECK(mpk_heap_free(h, a) == 0 && mpk_heap_free(h, b) == 0);
	t_attack_reported(free_it, a, "double free of", a, "mpk_heap_free");

	t_misuse_catch();
	CHECK_ERR(mpk_heap_free(h, a), EINVAL);
	CHECK_MISUSE(MPK_MISUSE_DOUBLE_FREE, a);
	void *x = mpk_heap_malloc(h, 40), *y = mpk_heap_malloc(h, 40), *z = mpk_heap_malloc(h, 40);
	REQUIRE(x && y && z);
	CHECK(x != y && y != z && x != z);
	keep[0] = (struct t_span){ x, 40 };
	keep[1] = (struct t_span){ y, 40 };
	t_attack_sweep(h, keep, 2);

	/* Freed, then gone back to its slab (the cache flushed by stats):
	 * the bitmap names the second free. */
	CHECK(mpk_heap_free(h, z) == 0);
	struct mpk_heap_stats st;
	REQUIRE(mpk_heap_stats_get(h, &st) == 0);
	t_attack_reported(free_it, z, "double free of", z, "mpk_heap_free");
	CHECK_ERR(mpk_heap_free(h, z), EINVAL);
	CHECK_MISUSE(MPK_MISUSE_DOUBLE_FREE, z);
	t_attack_sweep(h, keep, 2);

	/* Page runs and regions of their own alike. */
	static const size_t big[] = { 6000, 300000 };
	for (int i = 0; i < 2; i++) {
		void *p = mpk_heap_malloc(h, big[i]);
		REQUIRE(p);
		CHECK(mpk_heap_free(h, p) == 0);
		t_attack_reported(free_it, p, "double free of", p, "mpk_heap_free");
		CHECK_ERR(mpk_heap_free(h, p), EINVAL);
		CHECK_MISUSE(MPK_MISUSE_DOUBLE_FREE, p);
		t_attack_sweep(h, keep, 2);
	}

	/* The live header written back over the cached block's, then a
	 * second free: whatever the free says, no block goes to two owners. */
	unsigned char live[16];
	unsigned char *v = mpk_heap_malloc(h, 40);
	REQUIRE(v);
	t_attack_copy(live, v - 16, 16);
	CHECK(mpk_heap_free(h, v) == 0);
	t_attack_copy(v - 16, live, 16);
	t_misuses = 0;
	(void)mpk_heap_free(h, v);
	void *p1 = mpk_heap_malloc(h, 40), *p2 = mpk_heap_malloc(h, 40);
	CHECK(p1 && p2 && p1 != p2);
	keep[0] = (struct t_span){ p1, 40 };
	keep[1] = (struct t_span){ p2, 40 };
	t_attack_sweep(h, keep, 2);

	CHECK(mpk_heap_free(h, x) == 0 && mpk_heap_free(h, y) == 0);
	CHECK(mpk_heap_destroy(h) == 0 && mpk_domain_destroy(d) == 0);
	return t_done();
}
