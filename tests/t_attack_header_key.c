/*
 * Attack: the reader-writer attacker's headers.  The header check is a
 * bijection in the heap's key: one header read gives the key (the scheme
 * is in the source), and every header written after that checks.  With
 * it the attacker raises a live block's size (48 bytes said to be 2000,
 * a 10-page run said to be 12: a bigger block over the neighbours),
 * writes a header inside a live block (an interior "house of spirit": the
 * inside handed out while the owner holds it), and asks usable_size of a
 * block that is none.  Sealed (MPKIT_HEAP_META=closed), headers are a
 * hint: where a block starts, its class and length, and whether it is
 * live come from the slab or the run (in the metadata), so a raised size
 * is named corrupted, an interior pointer wild, and no block allocated
 * afterwards overlaps a live one.  With the metadata open the thread
 * cache trusts a checking header: only a blind attacker is stopped (see
 * docs/heaps.md).  Both backends.
 */
#include "t_attack.h"

enum { N = 8, RUN = 40000, RUN_SAYS = 48000 };

static void scenario(void)
{
	struct t_span keep[N + 4];
	unsigned char *n[N];
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	t_setenv("MPKIT_HEAP_META", "closed");
	mpk_domain *d = mpk_domain_create("attack-key", MPK_RW, 0);
	REQUIRE(d);
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h);
	t_misuse_catch();
	for (int i = 0; i < N; i++) {
		REQUIRE(n[i] = mpk_heap_malloc(h, 48));
		memset(n[i], i, 48);
		keep[i] = (struct t_span){ n[i], 48 };
	}
	/* The key, from one header; a header written with it checks. */
	uint64_t key = t_attack_hdr_key(n[0]);
	t_attack_hdr_forge(n[1], 40, 16, key);
	CHECK(mpk_heap_usable_size(h, n[1]) >= 40);
	CHECK(t_misuses == 0);

	/* A live neighbour said to be 2000 bytes: free and realloc. */
	t_attack_hdr_forge(n[2], 2000, 16, key);
	CHECK(mpk_heap_usable_size(h, n[2]) <= 48);
	t_misuses = 0;
	if (mpk_heap_free(h, n[2]) == 0)
		keep[2] = (struct t_span){ NULL, 0 };
	t_misuses = 0;
	t_attack_hdr_forge(n[3], 2000, 16, key);
	unsigned char *q = mpk_heap_realloc(h, n[3], 1500);
	if (q)
		keep[3] = (struct t_span){ q, 1500 };
	t_misuses = 0;

	/* A header inside a live block: its free, and its usable size. */
	unsigned char *x = mpk_heap_malloc(h, 256);
	REQUIRE(x);
	memset(x, 0x55, 256);
	keep[N] = (struct t_span){ x, 256 };
	t_attack_hdr_forge(x + 80, 100, 16, key);
	CHECK_ERR(mpk_heap_free(h, x + 80), EINVAL);
	CHECK_MISUSE(MPK_MISUSE_WILD, x + 80);
	t_attack_hdr_forge(x + 160, 100, 160, key); /* the offset free would check */
	CHECK(mpk_heap_usable_size(h, x + 160) == 0);
	CHECK_MISUSE(MPK_MISUSE_WILD, x + 160);

	/* A page run said to be longer, with the longer run's check. */
	unsigned char *r = mpk_heap_malloc(h, RUN), *after = mpk_heap_malloc(h, RUN);
	REQUIRE(r && after);
	keep[N + 1] = (struct t_span){ r, RUN };
	keep[N + 2] = (struct t_span){ after, RUN };
	uint64_t pages = (RUN_SAYS + 16 + page - 1) / page;
	t_attack_hdr_forge(r, RUN_SAYS, 16 + (1ull << 40) + (pages << 41), key);
	if (mpk_heap_free(h, r) == 0)
		keep[N + 1] = (struct t_span){ NULL, 0 };
	t_misuses = 0;
	for (int i = 0; i < 4; i++) {
		unsigned char *b = mpk_heap_malloc(h, RUN_SAYS);
		REQUIRE(b);
		for (int k = 0; k < N + 3; k++)
			if (keep[k].p && b < (unsigned char *)keep[k].p + keep[k].len &&
			    (unsigned char *)keep[k].p < b + RUN_SAYS)
				t_fail("a %d-byte block %p over the live %p+%zu", RUN_SAYS, (void *)b,
				       keep[k].p, keep[k].len);
		CHECK(mpk_heap_free(h, b) == 0);
	}
	t_attack_sweep(h, keep, N + 3);
	for (int i = 4; i < N; i++)
		for (int k = 0; k < 48; k++)
			if (n[i][k] != i) {
				t_fail("neighbour %d overwritten at %d", i, k);
				break;
			}
	CHECK(t_misuses == 0);
	CHECK(mpk_heap_destroy(h) == 0 && mpk_domain_destroy(d) == 0);
	t_setenv("MPKIT_HEAP_META", NULL);
}

int main(void)
{
	return t_both_backends(scenario);
}
