/* SPDX-License-Identifier: MIT */
/* libguardheap.so's calls (guard_heap_lib.c). */
#ifndef GUARD_HEAP_LIB_H
#define GUARD_HEAP_LIB_H

#include <stddef.h>

char *g_kept(size_t n, int c);
char *g_grow(size_t from, size_t to, int c);
int g_touch(void);
void g_drop(void);
char *g_copy(const char *s);
void *g_block(size_t n);
void *g_malloc(size_t n);
int g_aligned(size_t align);
void g_fill(char *p, size_t n, int c);
void *g_call(void *(*fn)(size_t), size_t n);

/* A structure the API lets the program write (as xmlXPathNewContext()'s):
 * its name a copy made under it (g_copy, through its gate). */
struct g_ctx {
	char *name;
	int n;
};
struct g_ctx *g_new_ctx(const char *name);
char *g_new_buf(size_t n);

#endif
