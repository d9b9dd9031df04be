/*
 * Attack: forged remote-free links.  Blocks one thread frees that another
 * thread's arena owns went, with the metadata open, onto that arena's
 * remote list, linked through the blocks' first 8 bytes, each link XOR a
 * hash of the heap's cache key and the block's address; the drain trusts
 * a link to a block whose header says "cached".  The reader-writer
 * attacker takes the cache key and the cached mark's token from a thread
 * cache (found by scanning memory, t_attack_cache_plant), writes into
 * every freed block a link to a live block, and the cached mark into
 * that block's header: the arena's next refill gave the live block back
 * and handed it out again, over its owner.  Sealed (MPKIT_HEAP_META=
 * closed) there are no caches and no remote lists: a free by another
 * thread takes the arena's lock with the metadata open, and nothing in a
 * freed block is read.  No block allocated afterwards overlaps the live
 * one.  Both backends.
 */
#include <pthread.h>
#include <stddef.h>

#include "t_attack.h"
#include "../src/heap/heap.h" /* the entry's shape, read from the source */

enum { N = 300, SIZE = 48, OFF_CKEY = offsetof(struct tcache, ckey), OFF_TOK = offsetof(struct tcache, tok),
       OFF_DOMAIN = offsetof(struct tcache, domain) };

static unsigned char *blk[N];
static mpk_heap *h;

static void *freer(void *arg)
{
	(void)arg;
	REQUIRE(mpk_set(mpk_heap_domain(h), MPK_RW) == 0); /* links are written into blocks */
	for (int i = 0; i < N; i++)
		if (mpk_heap_free(h, blk[i]))
			t_fail("free of %p in the other thread", (void *)blk[i]);
	return NULL; /* its cache goes back as it exits */
}

/* src/heap/heap.h's mpk__mix(), read from the source. */
static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void scenario(void)
{
	pthread_t t;

	t_setenv("MPKIT_HEAP_META", "closed");
	mpk_domain *d = mpk_domain_create("attack-remote", MPK_RW, 0);
	REQUIRE(d && (h = mpk_heap_create(d, 0)));
	REQUIRE(mpk_set(d, MPK_RW) == 0);
	t_misuse_catch();
	unsigned char *live = mpk_heap_malloc(h, SIZE);
	REQUIRE(live);
	memset(live, 0x5a, SIZE);
	for (int i = 0; i < N; i++)
		REQUIRE(blk[i] = mpk_heap_malloc(h, SIZE));
	REQUIRE(pthread_create(&t, NULL, freer, NULL) == 0);
	REQUIRE(pthread_join(t, NULL) == 0);

	/* The keys, from this thread's cache if there is one. */
	uint64_t ckey = 0, tok = 0;
	unsigned char *e = t_attack_find((uintptr_t)h, OFF_DOMAIN, (uintptr_t)d);
	if (e) {
		memcpy(&ckey, e + OFF_CKEY, 8);
		memcpy(&tok, e + OFF_TOK, 8);
	}
	/* Every freed block links to the live one, which says "cached". */
	for (int i = 0; i < N; i++) {
		uint64_t link = (uintptr_t)live ^ mix(ckey ^ (uintptr_t)blk[i]);
		t_attack_copy(blk[i], &link, 8);
	}
	uint64_t mark[2] = { ((uintptr_t)live ^ tok) | (1ull << 63), 0 }, hdr[2];
	t_attack_copy(hdr, live - 16, 16);
	t_attack_copy(live - 16, mark, 16);

	/* The refills that drain the list. */
	struct t_span keep = { live, SIZE };
	for (int i = 0; i < N; i++) {
		unsigned char *q = mpk_heap_malloc(h, SIZE);
		REQUIRE(q);
		if (q == live)
			t_fail("the live block %p handed out again", (void *)live);
		blk[i] = q;
	}
	t_attack_copy(live - 16, hdr, 16); /* as its owner left it */
	t_attack_sweep(h, &keep, 1);
	for (int k = 0; k < SIZE; k++)
		if (live[k] != 0x5a) {
			t_fail("the live block was written at %d", k);
			break;
		}
	for (int i = 0; i < N; i++)
		if (blk[i] != live)
			CHECK(mpk_heap_free(h, blk[i]) == 0);
	CHECK(mpk_heap_free(h, live) == 0);
	CHECK(t_misuses == 0);
	CHECK(mpk_heap_destroy(h) == 0 && mpk_domain_destroy(d) == 0);
	t_setenv("MPKIT_HEAP_META", NULL);
}

int main(void)
{
	return t_both_backends(scenario);
}
