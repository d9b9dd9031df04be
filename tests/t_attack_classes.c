/* SPDX-License-Identifier: MIT */
/*
 * Attack: the size-class tables the heap makes at its start, rewritten
 * in libmpkit's data by an attacker who reads the heap layer's objects
 * from the symbol table and spots each table by its shape (the source
 * says it):
 *  - the class of a small size (a byte per 16 bytes, 2049 of them, from
 *    0 to the last class, never falling): needs of 36 to 128 bytes sent
 *    to the 16-byte class, so that each block runs over its neighbours;
 *  - a slab's block count (a 16-bit count per class, 256 for 16 bytes,
 *    128 for 32): the 32-byte class's raised to 256, so that a one-page
 *    slab hands out a second page's worth of blocks, over the next run's.
 * With the old layout (the tables in .bss) blocks overlapped (headers
 * included; the test fails there).  Now the tables are read-only once
 * made: the write faults where it is made.  Both backends, the metadata
 * open and sealed (the tables are read-only in every mode).
 */
#include "t_attack.h"

enum { NCLS = 53, NOF16 = 32768 / 16 + 1, N = 600 };

/* A byte per 16 bytes of a small size, its class: 0, 0, 1, 2, ... 52. */
static unsigned char *find_of16(const struct t_obj *o, int no)
{
	for (int i = 0; i < no; i++)
		for (size_t k = 0; k + NOF16 <= o[i].size; k++) {
			const unsigned char *b = (const unsigned char *)o[i].at + k;
			bool ok = b[0] == 0 && b[1] == 0 && b[2] == 1 && b[3] == 2 && b[NOF16 - 1] == NCLS - 1;
			for (int j = 1; j < NOF16 && ok; j++)
				ok = b[j] >= b[j - 1] && b[j] - b[j - 1] <= 1;
			if (ok)
				return (unsigned char *)b;
		}
	return NULL;
}

/* A 16-bit count per class, 256 then 128, each 1 to 256. */
static uint16_t *find_blocks(const struct t_obj *o, int no)
{
	for (int i = 0; i < no; i++)
		for (size_t k = 0; k + NCLS * 2 <= o[i].size; k += 2) {
			uint16_t b[NCLS];
			memcpy(b, (const char *)o[i].at + k, sizeof(b));
			bool ok = b[0] == 256 && b[1] == 128;
			for (int j = 2; j < NCLS && ok; j++)
				ok = b[j] >= 1 && b[j] <= 256;
			if (ok)
				return (uint16_t *)(o[i].at + k);
		}
	return NULL;
}

struct arg {
	mpk_heap *h;
	unsigned char *of16; /* or NULL */
	uint16_t *blocks;    /* or NULL */
};

/* N blocks of n bytes: none may overlap another (headers included). */
static void take(mpk_heap *h, size_t n)
{
	static struct t_span got[N];

	for (int i = 0; i < N; i++) {
		unsigned char *q = mpk_heap_malloc(h, n);
		REQUIRE(q);
		got[i] = (struct t_span){ q - 16, n + 16 };
	}
	qsort(got, N, sizeof(*got), t_span_by_addr);
	int bad = 0;
	for (int i = 1; i < N; i++)
		if ((const char *)got[i - 1].p + got[i - 1].len > (const char *)got[i].p && bad++ < 4)
			t_fail("blocks %p+%zu and %p+%zu overlap", got[i - 1].p, got[i - 1].len, got[i].p,
			       got[i].len);
	if (bad)
		t_fail("%d pairs of %zu-byte blocks overlap", bad, n);
}

static void write_of16(void *p)
{
	const struct arg *a = p;

	memset(a->of16 + 3, 0, 6); /* the attacker's write: 36 to 128 bytes -> 16 */
	take(a->h, 20);
}

static void write_blocks(void *p)
{
	const struct arg *a = p;

	*(volatile uint16_t *)&a->blocks[1] = 256; /* the attacker's write */
	take(a->h, 16);
}

static void one(const char *what, void (*fn)(void *), const struct arg *a, const void *at, size_t len)
{
	struct t_child c = t_child(fn, (void *)a, T_CHILD_FAULT | T_CHILD_CHECKS);

	if (c.fault.faulted && (const char *)c.fault.where >= (const char *)at &&
	    (const char *)c.fault.where < (const char *)at + len)
		printf("%s: the write faulted: sealed\n", what);
	else if (c.exit_code)
		t_fail("%s at %p rewritten: exit %d (fault at %p)", what, at, c.exit_code, c.fault.where);
	else
		t_fail("%s at %p rewritten: no fault", what, at);
	t_child_free(&c);
}

static void attack_in(const char *meta)
{
	static struct t_obj o[512];

	t_setenv("MPKIT_HEAP_META", meta);
	mpk_domain *d = mpk_domain_create("attack-cls", MPK_RW, 0);
	REQUIRE(d);
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h);
	int no = t_attack_heap_objects(o, 512);
	struct arg a = { h, find_of16(o, no), find_blocks(o, no) };
	if (!a.of16)
		t_fail("no table of small sizes' classes found in the heap layer's data");
	if (!a.blocks)
		t_fail("no table of slabs' block counts found in the heap layer's data");
	REQUIRE(a.of16 && a.blocks);

	one("the classes of small sizes", write_of16, &a, a.of16 + 3, 6);
	one("the slabs' block counts", write_blocks, &a, &a.blocks[1], 2);
	/* Untouched here, the tables still give blocks apart. */
	t_attack_sweep(h, NULL, 0);
	CHECK(mpk_heap_destroy(h) == 0 && mpk_domain_destroy(d) == 0);
	t_setenv("MPKIT_HEAP_META", NULL);
}

static void attack(void)
{
	attack_in("open");
	attack_in("closed");
}

int main(void)
{
	return t_both_backends(attack);
}
