/* SPDX-License-Identifier: MIT */
/*
 * mpkit's own allocations in libmpkit-malloc.o, the drop-in for static
 * programs: the library's objects are linked into it with -Wl,--wrap (see
 * the Makefile), so their malloc/calloc/realloc/free come here and go to
 * the internal allocator, never to the heap they are inside.  The shared
 * drop-in links libmpkit.so instead, which allocates from malloc only
 * outside its locks (see malloc.c's `inside`, and heap/cache.c's
 * bundle()).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "malloc.h"

void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);
void __wrap_free(void *p);
/* --wrap's names for the drop-in's own entry points (malloc.c). */
void *__real_realloc(void *p, size_t size);
void __real_free(void *p);

void *__wrap_malloc(size_t size)
{
	return mpk__boot_alloc(size, 16);
}

void *__wrap_calloc(size_t n, size_t size)
{
	size_t len;

	if (__builtin_mul_overflow(n, size, &len)) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = mpk__boot_alloc(len, 16);
	if (p)
		memset(p, 0, len); /* a reused block is not zero */
	return p;
}

void *__wrap_realloc(void *p, size_t size)
{
	if (p && !mpk__boot_owns(p)) /* from the C library (strdup()...): the heap's */
		return __real_realloc(p, size);
	return mpk__boot_realloc(p, size);
}

void __wrap_free(void *p)
{
	if (p)
		__real_free(p); /* malloc.c's free() knows both kinds */
}
