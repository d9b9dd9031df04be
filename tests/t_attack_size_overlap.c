/*
 * Attack: corrupting a block's size to get overlapping blocks (how2heap's
 * overlapping_chunks): enlarge the size a free block records, free it (or
 * grow it in place by realloc), and the allocator hands out a bigger block
 * over its live neighbours.  mpkit: a block's size lives in its header and
 * only there, covered by the keyed check, and the size class of a slot is
 * the slab's (in the metadata), not the header's.  A live block whose size
 * was raised is named corrupted by free, realloc and usable_size (report:
 * the block, the call, a backtrace; abort); one raised while it sits in a
 * thread's cache is never handed out as bigger.  Either way no block
 * allocated afterwards overlaps the neighbours.
 */
#include "t_attack.h"

static mpk_heap *h;

static void grow_it(void *p)
{
	(void)!mpk_heap_realloc(h, p, 2000);
}

/* Set the size in p's header, keeping its check. */
static void resize(unsigned char *p, uint64_t size, uint64_t keep_bits)
{
	uint64_t old;
	t_attack_copy(&old, p - 16, 8);
	size |= old & keep_bits;
	t_attack_copy(p - 16, &size, 8);
}

int main(void)
{
	struct t_span keep[8];

	t_backend();
	mpk_domain *d = mpk_domain_create("attack-size", MPK_RW, 0);
	REQUIRE(d && (h = mpk_heap_create(d, 0)));

	/* A live 48-byte block made to say 2000 bytes, between live ones. */
	unsigned char *n[8];
	for (int i = 0; i < 8; i++) {
		REQUIRE(n[i] = mpk_heap_malloc(h, 48));
		memset(n[i], i, 48);
		keep[i] = (struct t_span){ n[i], 48 };
	}
	unsigned char *v = n[2];
	resize(v, 2000, 0);
	t_attack_reported(grow_it, v, "corrupted block header before", v, "mpk_heap_realloc");
	t_misuse_catch();
	CHECK_ERR(mpk_heap_realloc(h, v, 2000), EINVAL);
	CHECK_MISUSE(MPK_MISUSE_CORRUPT, v);
	CHECK_ERR(mpk_heap_free(h, v), EINVAL);
	CHECK_MISUSE(MPK_MISUSE_CORRUPT, v);
	CHECK(mpk_heap_usable_size(h, v) == 0);
	CHECK_MISUSE(MPK_MISUSE_CORRUPT, v);
	t_attack_sweep(h, keep, 8);

	/* Freed, then raised while cached (the cached mark kept): malloc of
	 * a big size never gets it, a small one gets it at its own size. */
	unsigned char *w = n[5];
	CHECK(mpk_heap_free(h, w) == 0);
	resize(w, 2000, 1ull << 63);
	keep[5] = (struct t_span){ NULL, 0 };
	t_attack_sweep(h, keep, 8);
	for (int i = 0; i < 8; i++)
		if (i != 2 && i != 5)
			for (int k = 0; k < 48; k++)
				if (n[i][k] != i) {
					t_fail("neighbour %d overwritten at %d", i, k);
					break;
				}
	CHECK(t_misuses == 0);

	/* A page run made to say it is longer. */
	unsigned char *r = mpk_heap_malloc(h, 5000), *after = mpk_heap_malloc(h, 5000);
	REQUIRE(r && after);
	resize(r, 100000, 0);
	CHECK_ERR(mpk_heap_realloc(h, r, 90000), EINVAL);
	CHECK_MISUSE(MPK_MISUSE_CORRUPT, r);
	keep[0] = (struct t_span){ r, 5000 };
	keep[1] = (struct t_span){ after, 5000 };
	t_attack_sweep(h, keep, 2);
	CHECK(t_misuses == 0);

	CHECK(mpk_heap_destroy(h) == 0 && mpk_domain_destroy(d) == 0);
	return t_done();
}
