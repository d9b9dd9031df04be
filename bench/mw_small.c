/* SPDX-License-Identifier: MIT */
/*
 * mpkit bench malloc's "small": many small blocks built up, then freed
 * (mimalloc-bench's cfrac and espresso are of this kind): each round
 * builds a tree of nodes of 24 to 72 bytes, making and dropping a
 * short-lived temporary per node as arithmetic on big numbers does,
 * walks it, and frees it; one round in four keeps its tree until the
 * end, so that the heap grows.  The sum is of the values walked.
 * MW_PHASES=1 times the three phases (building, walking, freeing) and
 * prints them on stderr: docs/malloc.md, "small".
 */
#include "mw.h"

struct node {
	struct node *kid[2];
	uint64_t v;
	unsigned char pad[]; /* 0 to 48 bytes */
};

static struct node *insert(struct node *root, struct node *n)
{
	struct node **at = &root;

	while (*at)
		at = &(*at)->kid[n->v > (*at)->v];
	*at = n;
	return root;
}

static uint64_t walk(const struct node *n, uint64_t depth)
{
	uint64_t sum = 0;

	for (; n; n = n->kid[1], depth++)
		sum += n->v * depth + n->pad[0] + walk(n->kid[0], depth + 1);
	return sum;
}

static void drop(struct node *n)
{
	while (n) {
		struct node *next = n->kid[1];
		drop(n->kid[0]);
		free(n);
		n = next;
	}
}

int main(int argc, char **argv)
{
	long nodes = mw_amount(argc, argv, 1500000, 30000), rounds = 8;
	struct node *kept[8] = { 0 };
	uint64_t s = 0x3c6ef372fe94f82bull, sum = 0;
	double ph[3] = { 0 }, t0 = mw_now(); /* build, walk, free */

	for (long r = 0; r < rounds; r++) {
		struct node *root = NULL;
		for (long i = 0; i < nodes / rounds * 2; i++) {
			size_t pad = mw_size(&s, 1, 48);
			struct node *n = mw_alloc(sizeof(*n) + pad);
			n->kid[0] = n->kid[1] = NULL;
			n->v = mw_rnd(&s) >> 20;
			size_t tn = mw_size(&s, 16, 64); /* a temporary */
			unsigned char *t = mw_alloc(tn);
			mw_stamp(t, tn, n->v);
			n->pad[0] = (unsigned char)mw_check(t, tn);
			free(t);
			root = insert(root, n);
		}
		ph[0] += mw_now() - t0, t0 = mw_now();
		sum += walk(root, 1);
		ph[1] += mw_now() - t0, t0 = mw_now();
		if (r % 4 == 1)
			kept[r] = root;
		else
			drop(root);
		ph[2] += mw_now() - t0, t0 = mw_now();
	}
	for (long r = 0; r < rounds; r++)
		drop(kept[r]);
	ph[2] += mw_now() - t0;
	if (mw_phases())
		fprintf(stderr, "small: build %.3f s, walk %.3f s, free %.3f s\n", ph[0], ph[1], ph[2]);
	printf("small: %ld nodes, sum %016llx\n", nodes / rounds * 2 * rounds, (unsigned long long)sum);
	return 0;
}
