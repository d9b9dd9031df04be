/* SPDX-License-Identifier: MIT */
/* The drop-in allocator's parts (src/malloc/), shared by its files only. */
#ifndef MPK_MALLOC_H
#define MPK_MALLOC_H

#include <stdbool.h>
#include <stddef.h>

/* boot.c: the internal allocator.  Alignment a power of two. */
void *mpk__boot_alloc(size_t size, size_t align);
void *mpk__boot_realloc(void *p, size_t size);
void mpk__boot_free(void *p);
size_t mpk__boot_usable(const void *p);
bool mpk__boot_owns(const void *p);
extern bool mpk__boot_wipe; /* MPKIT_MALLOC_WIPE: free zeroes a block */
void mpk__boot_lock(void);
void mpk__boot_unlock(void);

/* debug.c: allocation and free stacks per block (MPKIT_MALLOC_DEBUG):
 * _init() makes the table (-1: it cannot), _alloc()/_free() record the
 * calling stack for p, _describe() writes both into a report. */
struct mpk__text;
int mpk__dbg_init(void);
void mpk__dbg_alloc(void *p);
void mpk__dbg_free(void *p);
void mpk__dbg_describe(struct mpk__text *t, const void *p);

/* malloc.c: a message on stderr, then abort(). */
_Noreturn void mpk__malloc_die(const char *why);

#endif
