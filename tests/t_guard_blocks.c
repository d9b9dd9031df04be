/*
 * The guard helper's index of heap blocks (tools/guard_blocks.c), linked
 * in alone: blocks laid out as a heap would (16-aligned, packed, some
 * over 64 KiB), added and forgotten at random, 20,000 at a time (the
 * table and the big array grow), and after each round addresses inside,
 * between and past them looked up against a plain list: the block an
 * address is in (start, size asked for), else the nearest below it (a
 * small block starting, a big one ending, within 64 KiB), else free.
 * While a heap call is under way (begin without end) "in a block" is
 * still answered, "in none" is not known; a block's size comes back
 * when it is forgotten, -1 for one never recorded.
 */
#include <stdlib.h>

#include "guard.h"
#include "t.h"

#define NB 20000
#define SMALL ((uintptr_t)64 << 10)

static struct {
	uintptr_t p;
	size_t n;
	int live;
} blk[NB];

/* What the index should say of a. */
static struct guard_block expect(uintptr_t a)
{
	struct guard_block e = { GUARD_BLOCK_FREE, 0, 0 };

	for (int i = 0; i < NB; i++) {
		if (!blk[i].live || blk[i].p > a)
			continue;
		if (a - blk[i].p < blk[i].n)
			return (struct guard_block){ GUARD_BLOCK_IN, blk[i].p, blk[i].n };
		int near = blk[i].n > SMALL ? a - blk[i].p - blk[i].n < SMALL : a - blk[i].p < SMALL;
		if (near && blk[i].p > e.start)
			e = (struct guard_block){ GUARD_BLOCK_PAST, blk[i].p, blk[i].n };
	}
	return e;
}

static int same(const struct guard_block *x, const struct guard_block *y)
{
	return x->kind == y->kind && (x->kind == GUARD_BLOCK_FREE || (x->start == y->start && x->size == y->size));
}

static void check_at(uintptr_t a)
{
	struct guard_block got, want = expect(a);

	guard_blocks_find(a, &got);
	if (!same(&got, &want)) {
		CHECK(same(&got, &want));
		fprintf(stderr, "at %#lx: got %d %#lx %zu, want %d %#lx %zu\n", (unsigned long)a, got.kind,
			(unsigned long)got.start, got.size, want.kind, (unsigned long)want.start, want.size);
	}
}

int main(void)
{
	uintptr_t at = (uintptr_t)1 << 40;

	srand(35);
	guard_blocks_start();
	for (int i = 0; i < NB; i++) {
		size_t n = rand() % 50 ? 1 + (size_t)rand() % 600 : SMALL + (size_t)rand() % 200000;
		blk[i].p = at;
		blk[i].n = n;
		at += (n + 16 + 15) & ~(uintptr_t)15; /* a header's room */
		at += (uintptr_t)(rand() % 4) * 4096;
	}
	for (int round = 0; round < 4 && !t_failures; round++) {
		for (int i = 0; i < NB; i++) {
			if (rand() % 3 == 0)
				continue;
			if (blk[i].live) {
				CHECK(guard_blocks_begin((void *)blk[i].p) == blk[i].n);
				guard_blocks_end(NULL, 0);
			} else {
				CHECK(guard_blocks_begin(NULL) == (size_t)-1);
				guard_blocks_end((void *)blk[i].p, blk[i].n);
			}
			blk[i].live = !blk[i].live;
		}
		for (int k = 0; k < 600 && !t_failures; k++) {
			int i = rand() % NB;
			check_at(blk[i].p);
			check_at(blk[i].p + blk[i].n - 1);
			check_at(blk[i].p + blk[i].n);                 /* just past it */
			check_at(blk[i].p + (uintptr_t)rand() % (blk[i].n + 20000));
			check_at(blk[i].p - 1);
		}
	}
	CHECK(guard_blocks_begin((void *)(blk[0].p + 16)) == (size_t)-1);
	guard_blocks_end(NULL, 0);

	/* A heap call under way: "in" still known, "in none" not. */
	int in = -1, out = -1;
	for (int i = 0; i < NB && (in < 0 || out < 0); i++)
		*(blk[i].live ? &in : &out) = i;
	REQUIRE(in >= 0 && out >= 0);
	struct guard_block got;
	(void)guard_blocks_begin(NULL);
	guard_blocks_find(blk[in].p + 1, &got);
	CHECK(got.kind == GUARD_BLOCK_IN && got.start == blk[in].p);
	guard_blocks_find(blk[out].p, &got);
	CHECK(got.kind == GUARD_BLOCK_UNKNOWN);
	guard_blocks_end(NULL, 0);
	guard_blocks_find(blk[out].p, &got);
	CHECK(got.kind == GUARD_BLOCK_PAST || got.kind == GUARD_BLOCK_FREE);
	return t_done();
}
