/* SPDX-License-Identifier: MIT */
/* The drop-in allocator's parts (src/malloc/), shared by its files only. */
#ifndef MPK_MALLOC_H
#define MPK_MALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* boot.c: the internal allocator.  Alignment a power of two. */
void *mpk__boot_alloc(size_t size, size_t align);
void *mpk__boot_realloc(void *p, size_t size);
void mpk__boot_free(void *p);
size_t mpk__boot_usable(const void *p);
#define MPK__BOOT_RESERVE ((size_t)1 << 32) /* address space only: PROT_NONE until used */
#define MPK__BOOT_PAGE 4096
/* Where its blocks, state and table are: set once, then read-only (a
 * page of its own, mprotect), so the test below cannot be talked into
 * calling a heap block the internal allocator's. */
union mpk__boot_fixed {
	struct {
		char *blocks;             /* the reserve for blocks */
		struct boot_state *st;    /* then the table after it */
		uint64_t *table;
	} f;
	char page[MPK__BOOT_PAGE];
};
extern union mpk__boot_fixed mpk__boot_fixed __attribute__((visibility("hidden"))); /* (read directly, not through the GOT) */
/* blocks before the reserve is made: the top of the address space, where
 * no user pointer is, so that the test below needs no NULL test of its own. */
#define MPK__BOOT_NONE ((char *)(uintptr_t)-MPK__BOOT_RESERVE)
/* Whether p is the internal allocator's: inline, as free() asks it of
 * every block. */
static inline bool mpk__boot_owns(const void *p)
{
	const char *b = __atomic_load_n(&mpk__boot_fixed.f.blocks, __ATOMIC_ACQUIRE);

	return (uintptr_t)p - (uintptr_t)b < MPK__BOOT_RESERVE;
}
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
