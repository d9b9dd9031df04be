/*
 * Attack: an overflow from one block into the next block's header (the
 * size field of glibc's next chunk), to make the allocator treat the next
 * block as bigger, or as free.  mpkit: the header's check is keyed per
 * heap over the block's address, size and offset, so the next block's
 * free (and realloc and usable_size) names a corrupted header (report:
 * the block, the call, a backtrace; abort).  With a handler that returns
 * the block stays allocated, and blocks allocated afterwards overlap
 * neither block.  An overflow into a block that sits in a thread's cache
 * is not reported, and is harmless: its header no longer says "cached",
 * so malloc drops that class's cache rather than take it; no overlap.
 */
#include "t_attack.h"

static mpk_heap *h;

static void free_it(void *p)
{
	mpk_heap_free(h, p);
}

/* Overflow a (usable n bytes) by 16: a header with this size and check. */
static void smash(unsigned char *a, size_t n, uint64_t size, uint64_t check)
{
	uint64_t hdr[2] = { size, check };
	t_attack_copy(a + n, hdr, 16);
}

int main(void)
{
	struct t_span keep[2];

	t_backend();
	mpk_domain *d = mpk_domain_create("attack-overflow", MPK_RW, 0);
	REQUIRE(d && (h = mpk_heap_create(d, 0)));

	/* Neighbours in a slab: a's 48 bytes, then b's header. */
	unsigned char *a = mpk_heap_malloc(h, 48), *b = mpk_heap_malloc(h, 48);
	unsigned char *c = mpk_heap_malloc(h, 48), *e = mpk_heap_malloc(h, 48);
	REQUIRE(a && b && b == a + 64 && c && e && e == c + 64);
	/* Neighbours in a chunk: two page runs (made before any is freed). */
	unsigned char *r1 = mpk_heap_malloc(h, 8192 - 16), *r2 = mpk_heap_malloc(h, 8192 - 16);
	REQUIRE(r1 && r2 && r2 == r1 + 8192);
	uint64_t old[2];
	t_attack_copy(old, b - 16, 16);
	smash(a, 48, 3000, old[1]); /* b "is" 3000 bytes */
	t_attack_reported(free_it, b, "corrupted block header before", b, "mpk_heap_free");

	t_misuse_catch();
	CHECK_ERR(mpk_heap_free(h, b), EINVAL);
	CHECK_MISUSE(MPK_MISUSE_CORRUPT, b);
	CHECK_ERR(mpk_heap_realloc(h, b, 2000), EINVAL);
	CHECK_MISUSE(MPK_MISUSE_CORRUPT, b);
	CHECK(mpk_heap_usable_size(h, b) == 0);
	CHECK_MISUSE(MPK_MISUSE_CORRUPT, b);
	keep[0] = (struct t_span){ a, 48 };
	keep[1] = (struct t_span){ b, 48 };
	t_attack_sweep(h, keep, 2);

	/* A page run's neighbour, its header made to say "cached" (free). */
	t_attack_copy(old, r2 - 16, 16);
	smash(r1, 8192 - 16, old[0] | (1ull << 63), ~old[1]);
	t_attack_reported(free_it, r2, "corrupted block header before", r2, "mpk_heap_free");
	CHECK_ERR(mpk_heap_free(h, r2), EINVAL);
	CHECK_MISUSE(MPK_MISUSE_CORRUPT, r2);
	keep[0] = (struct t_span){ r1, 8192 - 16 };
	keep[1] = (struct t_span){ r2, 8192 - 16 };
	t_attack_sweep(h, keep, 2);

	/* Into a cached block: it no longer says cached, and is not taken. */
	CHECK(mpk_heap_free(h, e) == 0);
	smash(c, 48, 100000, 0);
	keep[0] = (struct t_span){ c, 48 };
	t_attack_sweep(h, keep, 1);
	CHECK(t_misuses == 0);

	CHECK(mpk_heap_free(h, c) == 0 && mpk_heap_free(h, a) == 0 && mpk_heap_free(h, r1) == 0);
	CHECK(mpk_heap_destroy(h) == 0 && mpk_domain_destroy(d) == 0);
	return t_done();
}
