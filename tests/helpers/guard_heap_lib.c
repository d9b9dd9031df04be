/* SPDX-License-Identifier: MIT */
/*
 * libguardheap.so, the library t_guard_heap guards: it allocates blocks
 * with every call of the malloc family, keeps one (g_kept), hands others
 * to the program to read and free (g_copy, g_block: a tail call of
 * malloc, so the block is asked for from the gate's return address),
 * has an allocator of its own for the program (g_malloc),
 * writes blocks the program allocated and handed in (g_fill), and calls
 * back into the program (g_call), whose blocks stay the program's, and
 * makes structures for the program to fill, with names the
 * allocator-name rule does not take for allocators (g_new_ctx, g_new_buf:
 * mpkit guard's out= words).  Its
 * state has a page of its own in .data (musl's loader keeps the last
 * page of the segment for its malloc: docs/guard.md).
 */
#include <stdlib.h>
#include <string.h>

#include "guard_heap_lib.h"

static struct {
	char *kept;
	char rest[4096 - sizeof(char *)];
} own __attribute__((section(".data"), aligned(4096)));

/* The library's allocator, for the program (as sqlite3_malloc64 is):
 * its name says so, and its blocks called from outside are the
 * program's. */
void *g_malloc(size_t n)
{
	void *p = malloc(n);

	return p;
}

/* A block of n bytes of c that the library keeps (the last one freed),
 * from its own allocator through its gate: the library's. */
char *g_kept(size_t n, int c)
{
	void *(*m)(size_t) = g_malloc;

	__asm__("" : "+r"(m));
	free(own.kept);
	own.kept = m(n);
	if (own.kept)
		memset(own.kept, c, n);
	return own.kept;
}

/* The kept block grown (realloc inside), its new bytes set to c. */
char *g_grow(size_t from, size_t to, int c)
{
	char *p = realloc(own.kept, to);

	if (!p)
		return NULL;
	memset(p + from, c, to - from);
	return own.kept = p;
}

/* The library writes its kept block: i counts up in byte 0. */
int g_touch(void)
{
	return own.kept ? ++own.kept[0] : -1;
}

void g_drop(void)
{
	free(own.kept);
	own.kept = NULL;
}

/* A copy for the program to read and free (calloc inside). */
char *g_copy(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = calloc(1, n);

	if (p)
		memcpy(p, s, n);
	return p;
}

/* Tail call: malloc() returns straight to the gate. */
void *g_block(size_t n)
{
	return malloc(n);
}

/* align-aligned blocks from the aligned calls, each written once. */
int g_aligned(size_t align)
{
	void *a = aligned_alloc(align, align), *m = NULL;
	int ok = a && !((size_t)a % align) && !posix_memalign(&m, align, 64) && !((size_t)m % align);

	if (ok)
		memset(a, 1, align), memset(m, 2, 64);
	free(a);
	free(m);
	return ok;
}

/* A block the program allocated, written by the library. */
void g_fill(char *p, size_t n, int c)
{
	memset(p, c, n);
}

/* A callback: what it allocates is the program's. */
void *g_call(void *(*fn)(size_t), size_t n)
{
	return fn(n);
}

/* The program's to write, by its API: a context, and the name in it
 * copied by an export of the library's (g_copy, called through its gate,
 * from inside). */
struct g_ctx *g_new_ctx(const char *name)
{
	char *(*copy)(const char *) = g_copy;
	struct g_ctx *c = malloc(sizeof(*c));

	__asm__("" : "+r"(copy));
	if (c && !(c->name = copy(name))) {
		free(c);
		return NULL;
	}
	if (c)
		c->n = 0;
	return c;
}

/* A buffer the program fills. */
char *g_new_buf(size_t n)
{
	char *p = malloc(n);

	if (p)
		memset(p, 0, n);
	return p;
}
