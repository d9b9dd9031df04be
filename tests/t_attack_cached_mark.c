/*
 * Attack: one block handed out twice through the thread cache.  A double
 * free with the block's live header written back in between puts the
 * block in the cache twice; the first malloc takes it and writes a live
 * header.  The attacker then sets the one bit that marks a header cached
 * (bit 63 of the size word, read from a header as an attacker would find
 * it): the second malloc, which trusted that bit alone, handed the same
 * block to a second owner.  Now it wants the whole cached header, the
 * check flipped with a per-heap key, and drops the class's cache instead:
 * the sweep finds no block over the live one (open: a blind attacker's
 * bit, the cache trusting keyed headers).  Sealed there is no cache: the
 * second free finds the slot free in its slab's bitmap (in the metadata)
 * and is reported as a double free, whatever the header says.  Both
 * backends.
 */
#include "t_attack.h"

enum { SIZE = 48 };

static void mode(const char *meta)
{
	unsigned char live[16], hdr[16];

	t_setenv("MPKIT_HEAP_META", meta);
	mpk_domain *d = mpk_domain_create("attack-mark", MPK_RW, 0);
	REQUIRE(d);
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h);
	unsigned char *p = mpk_heap_malloc(h, SIZE);
	REQUIRE(p);
	t_attack_copy(live, p - 16, 16);
	CHECK(mpk_heap_free(h, p) == 0);
	t_attack_copy(p - 16, live, 16); /* looks live: a second free takes it */
	if (!strcmp(meta, "closed")) {
		CHECK_ERR(mpk_heap_free(h, p), EINVAL);
		CHECK_MISUSE(MPK_MISUSE_DOUBLE_FREE, p);
	} else {
		CHECK(mpk_heap_free(h, p) == 0);
	}
	unsigned char *q1 = mpk_heap_malloc(h, SIZE);
	CHECK(q1 == p); /* the cache's top */
	/* The mark, bit 63 of the size word, set again. */
	t_attack_copy(hdr, q1 - 16, 16);
	hdr[7] |= 0x80;
	t_attack_copy(q1 - 16, hdr, 16);
	unsigned char *q2 = mpk_heap_malloc(h, SIZE);
	REQUIRE(q2);
	if (q2 == q1)
		t_fail("metadata %s: the block %p was handed out twice", meta, (void *)q1);
	/* The header as the owner left it: the block is still q1's. */
	t_attack_copy(q1 - 16, live, 16);
	struct t_span keep = { q1, SIZE };
	t_attack_sweep(h, &keep, 1);
	CHECK(q2 == q1 || mpk_heap_free(h, q2) == 0);
	CHECK(mpk_heap_free(h, q1) == 0);
	CHECK(mpk_heap_destroy(h) == 0 && mpk_domain_destroy(d) == 0);
}

static void scenario(void)
{
	t_attack_both_modes(mode);
}

int main(void)
{
	return t_both_backends(scenario);
}
