/*
 * Attack: a write after free into a free block's link (how2heap's
 * tcache_poisoning): with glibc, the first 8 bytes of a freed chunk link
 * it to the next, and a pointer written there makes malloc hand out any
 * address.  mpkit keeps no link in a block in a thread's cache (the cache
 * is an array of its own, its entries XOR a per-cache key), so the same
 * write changes nothing: the blocks allocated afterwards are the heap's
 * and never the attacker's target.  Blocks another thread freed wait on
 * their arena's remote list, linked through their first 8 bytes (XOR a
 * key and their own address): a forged link there ends the list when the
 * arena drains it, and still no block is the target.
 */
#include <pthread.h>

#include "t_attack.h"

enum { N = 200, SIZE = 48 };

static mpk_heap *h;
static mpk_domain *d;
static unsigned char *blk[N];
static unsigned char target[4096] __attribute__((aligned(64)));

/* Write a forged link at the start of freed block p: the target, in
 * every 8-byte word the block has (wherever a link might be). */
static void poison(unsigned char *p)
{
	uintptr_t t = (uintptr_t)target + 64;
	for (size_t off = 0; off + 8 <= SIZE; off += 8)
		t_attack_copy(p + off, &t, 8);
}

static void *freer(void *arg)
{
	(void)arg;
	REQUIRE(mpk_set(d, MPK_RW) == 0);
	void *mine = mpk_heap_malloc(h, SIZE); /* this thread's arena */
	REQUIRE(mine);
	CHECK(mpk_heap_free(h, mine) == 0);
	for (int i = 0; i < N; i++)
		CHECK(mpk_heap_free(h, blk[i]) == 0);
	return NULL; /* its cache goes back as it exits: onto remote lists */
}

int main(void)
{
	struct t_span keep[2] = { { target, sizeof(target) }, { NULL, 0 } };
	pthread_t t;

	t_backend();
	REQUIRE(d = mpk_domain_create("attack-uaf", MPK_RW, 0));
	REQUIRE(h = mpk_heap_create(d, 0));
	t_misuse_catch();

	/* In this thread's cache: the forged links are plain data. */
	for (int i = 0; i < 8; i++)
		REQUIRE(blk[i] = mpk_heap_malloc(h, SIZE));
	for (int i = 0; i < 8; i++) {
		CHECK(mpk_heap_free(h, blk[i]) == 0);
		poison(blk[i]);
	}
	t_attack_sweep(h, keep, 1);

	/* On a remote list: another thread frees this thread's blocks. */
	for (int i = 0; i < N; i++)
		REQUIRE(blk[i] = mpk_heap_malloc(h, SIZE));
	REQUIRE(pthread_create(&t, NULL, freer, NULL) == 0);
	REQUIRE(pthread_join(t, NULL) == 0);
	for (int i = 0; i < N; i++)
		poison(blk[i]);
	/* A link naming a live block as the next one, too. */
	unsigned char *live = mpk_heap_malloc(h, SIZE);
	REQUIRE(live);
	uintptr_t l = (uintptr_t)live;
	t_attack_copy(blk[N / 2], &l, 8);
	keep[1] = (struct t_span){ live, SIZE };
	/* The refills drain the list; the sweep takes hundreds of blocks. */
	t_attack_sweep(h, keep, 2);
	t_attack_sweep(h, keep, 2);
	CHECK(t_misuses == 0);

	CHECK(mpk_heap_free(h, live) == 0);
	CHECK(mpk_heap_destroy(h) == 0 && mpk_domain_destroy(d) == 0);
	return t_done();
}
