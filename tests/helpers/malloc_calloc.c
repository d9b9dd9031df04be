/* SPDX-License-Identifier: MIT */
/*
 * What a program can leave in memory it gave back, run under the drop-in
 * by t_malloc_calloc: `malloc-calloc ATTACK SIZE` prints one line.
 *   tail    an overflow from a block into the never-used pages after it,
 *           then calloc(SIZE) there: "zero", or where it is not
 *   purged  a block freed, purged by the heap's decay (300 ms and more
 *           frees), written through the dangling pointer, then calloc(SIZE)
 *           in its place: the same
 *   wipe    a block filled, freed, and read back through the dangling
 *           pointer: "wiped" if every byte is zero, else "kept N" (the
 *           bytes still as written)
 * "missed" when calloc's block is not where the write went (the layout
 * is not the one the attack needs: no verdict).  Reading and writing
 * freed blocks is the point.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif

enum { PAT = 0xa5, FILLERS = 10, FILLER = 120 << 10 };

/* Blocks the attack keeps: volatile, or the compiler drops the calls. */
static unsigned char *volatile x, *volatile more[2];

static void scribble(unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		((volatile unsigned char *)p)[i] = PAT;
}

static int zero(const unsigned char *q, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (q[i]) {
			printf("nonzero 0x%02x at +%zu\n", q[i], i);
			return 1;
		}
	printf("zero\n");
	return 0;
}

static int tail(size_t size)
{
	unsigned char *a = malloc(size);
	size_t reach = size + 8192; /* over the next run's first block */
	scribble(a + size, reach);
	unsigned char *q = calloc(1, size);
	if (q <= a || q + size > a + size + reach) {
		printf("missed: %p after %p\n", (void *)q, (void *)a);
		return 2;
	}
	return zero(q, size);
}

static int purged(size_t size)
{
	/* Page runs up to 20 pages go through a thread cache that holds 2
	 * of a length: two more frees after v's send v back to the arena,
	 * two mallocs take them again before the calloc.  Sealed, there is
	 * no cache. */
	const char *meta = getenv("MPKIT_HEAP_META");
	int same = size + 16 <= 20 * 4096 && !(meta && !strcmp(meta, "closed")) ? 2 : 0;
	unsigned char *v = malloc(size), *fill[FILLERS];
	x = malloc(size); /* a neighbour: v's run stays v's */
	for (int i = 0; i < same; i++)
		more[i] = malloc(size);
	for (int i = 0; i < FILLERS; i++)
		fill[i] = malloc(FILLER);
	free(v);
	for (int i = 0; i < same; i++)
		free(more[i]);
	struct timespec ts = { 0, 300 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	for (int i = 0; i < FILLERS; i++)
		free(fill[i]); /* past 250 ms: the decay purges v's run */
	for (int i = 0; i < same; i++)
		more[i] = malloc(size);
	scribble(v, size); /* through the dangling pointer */
	unsigned char *q = calloc(1, size);
	if (q != v) {
		printf("missed: %p, not %p\n", (void *)q, (void *)v);
		return 2;
	}
	return zero(q, size);
}

static int wipe(size_t size)
{
	unsigned char *p = malloc(size);
	size_t kept = 0;

	scribble(p, size); /* (a memset() before free() is a dead store) */
	free(p);
	for (size_t i = 0; i < size; i++)
		kept += ((volatile unsigned char *)p)[i] == PAT;
	if (kept)
		printf("kept %zu\n", kept);
	else
		printf("wiped\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	size_t size = strtoul(argv[2], NULL, 0);
	if (!strcmp(argv[1], "tail"))
		return tail(size);
	if (!strcmp(argv[1], "purged"))
		return purged(size);
	if (!strcmp(argv[1], "wipe"))
		return wipe(size);
	return 2;
}
