/*
 * Attack: the thread caches' per-class limits (how many free blocks a
 * cache keeps of each class), rewritten in libmpkit's data by an attacker
 * who reads the heap layer's objects from the symbol table and spots the
 * table by its shape (the source says it: a byte per class, TC_MAX (128)
 * for the smallest, never growing with the class, 2 to 8 for the 12 page
 * run classes at its end).  Raised to 255, a cache's stack of a small
 * class runs past its TC_MAX slots into the next class's: that class's
 * malloc then hands out blocks of the smaller class, over their
 * neighbours (and blocks still listed in the first class's stack).  The
 * test frees 8 blocks of 32 bytes (a cached stack of the next class),
 * then 300 of 16, and takes them all again: with the old layout (the
 * table in .bss) blocks overlapped (headers included; the test fails
 * there).  Sealed, the table is read-only: the write faults where it is
 * made.  Both backends, the metadata sealed.
 */
#include "t_attack.h"

enum { NTC = 65, NSMALL = 53, SMALL = 300, NEXT = 8 };

/* The limits: where a heap-layer object holds a run shaped like them. */
static unsigned char *find_limits(void)
{
	static struct t_obj o[512];
	int no = t_attack_heap_objects(o, 512);

	for (int i = 0; i < no; i++)
		for (size_t k = 0; k + NTC <= o[i].size; k++) {
			const unsigned char *b = (const unsigned char *)o[i].at + k;
			bool ok = b[0] == 128 && b[NSMALL - 1] >= 2;
			for (int c = 1; c < NTC && ok; c++)
				ok = b[c] <= b[c - 1] || c == NSMALL;
			for (int c = NSMALL; c < NTC && ok; c++)
				ok = b[c] >= 2 && b[c] <= 8;
			if (ok)
				return (unsigned char *)b;
		}
	return NULL;
}

struct arg {
	mpk_heap *h;
	unsigned char *lim;
};

static void spill(void *p)
{
	const struct arg *a = p;
	static struct t_span got[SMALL + NEXT];
	void *blk[SMALL];

	memset(a->lim, 255, NSMALL); /* the attacker's write */
	for (int i = 0; i < NEXT; i++)
		blk[i] = mpk_heap_malloc(a->h, 32);
	for (int i = 0; i < NEXT; i++)
		CHECK(mpk_heap_free(a->h, blk[i]) == 0);
	for (int i = 0; i < SMALL; i++)
		blk[i] = mpk_heap_malloc(a->h, 16);
	for (int i = 0; i < SMALL; i++)
		CHECK(mpk_heap_free(a->h, blk[i]) == 0);
	for (int i = 0; i < SMALL + NEXT; i++) {
		size_t n = i < NEXT ? 32 : 16;
		unsigned char *q = mpk_heap_malloc(a->h, n);
		REQUIRE(q);
		got[i] = (struct t_span){ q - 16, n + 16 }; /* its header too */
	}
	qsort(got, SMALL + NEXT, sizeof(*got), t_span_by_addr);
	for (int i = 1; i < SMALL + NEXT; i++)
		if ((const char *)got[i - 1].p + got[i - 1].len > (const char *)got[i].p)
			t_fail("blocks %p+%zu and %p+%zu overlap", got[i - 1].p, got[i - 1].len, got[i].p,
			       got[i].len);
}

static void attack(void)
{
	t_setenv("MPKIT_HEAP_META", "closed");
	mpk_domain *d = mpk_domain_create("attack-lim", MPK_RW, 0);
	REQUIRE(d);
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h);
	struct arg a = { h, find_limits() };
	if (!a.lim)
		t_fail("no table of per-class limits found in the heap layer's data");
	REQUIRE(a.lim);

	struct t_child c = t_child(spill, &a, T_CHILD_FAULT | T_CHILD_CHECKS);
	/* (memset's stores may start anywhere in the table) */
	if (c.fault.faulted && (unsigned char *)c.fault.where >= a.lim &&
	    (unsigned char *)c.fault.where < a.lim + NSMALL)
		printf("the limits' write faulted: sealed\n");
	else if (c.exit_code)
		t_fail("with the limits at %p raised: exit %d (fault at %p)", (void *)a.lim, c.exit_code,
		       c.fault.where);
	t_child_free(&c);

	t_attack_sweep(h, NULL, 0);
	CHECK(mpk_heap_destroy(h) == 0 && mpk_domain_destroy(d) == 0);
	t_setenv("MPKIT_HEAP_META", NULL);
}

int main(void)
{
	return t_both_backends(attack);
}
