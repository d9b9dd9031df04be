/* SPDX-License-Identifier: MIT */
/*
 * The allocator's globals, sealed in place.  What decides where malloc's
 * next block comes from must not sit in writable .bss: a write there (one
 * found through libmpkit's symbol table) would steer the allocator.  So
 * the pointers to the area and its state, its ranges and the heap-meta
 * domain live in a page of their own, and the chunk tags in page-aligned
 * memory, both read-only while the area is sealed: every thread reads
 * them (the fast paths do, with no open), and the allocator makes them
 * writable for the few stores it makes when the area is made, grows or
 * goes and when a chunk comes or goes (two mprotect() each, rare).  A
 * store racing such a window is the one way in (as soft's own union).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/mman.h>

#include "heap.h"

union mpk__seal_page mpk__seal_pg __attribute__((aligned(SEAL_PAGE)));
uint32_t *mpk__tag_root[1u << (48 - CHUNK_SHIFT - TAG_L2)] __attribute__((aligned(SEAL_PAGE)));

_Static_assert(sizeof(union mpk__seal_page) == SEAL_PAGE, "the seal fills its page");
_Static_assert(sizeof(mpk__tag_root) % SEAL_PAGE == 0, "the tag root fills its pages");

static int protect(void *p, size_t len, bool rw)
{
	uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(SEAL_PAGE - 1);
	uintptr_t hi = ((uintptr_t)p + len + SEAL_PAGE - 1) & ~(uintptr_t)(SEAL_PAGE - 1);

	return mpk_os_mprotect((void *)lo, hi - lo, rw ? PROT_READ | PROT_WRITE : PROT_READ);
}

int mpk__seal_write(void *p, size_t len, bool on)
{
	if (!__atomic_load_n(&mpk__seal_pg.s.ro, __ATOMIC_RELAXED))
		return 0;
	return protect(p, len, on);
}

/* The tag table's leaves, each made read-only or writable. */
static int leaves(bool rw)
{
	for (size_t i = 0; i < sizeof(mpk__tag_root) / sizeof(mpk__tag_root[0]); i++) {
		uint32_t *leaf = __atomic_load_n(&mpk__tag_root[i], __ATOMIC_ACQUIRE);
		if (leaf && protect(leaf, sizeof(*leaf) << TAG_L2, rw))
			return -1;
	}
	return 0;
}

int mpk__seal_all(bool on)
{
	if (on == mpk__seal_pg.s.ro)
		return 0;
	if (on) {
		if (leaves(false) || protect(mpk__tag_root, sizeof(mpk__tag_root), false))
			goto undo;
		mpk__seal_pg.s.ro = true;
		if (protect(&mpk__seal_pg, sizeof(mpk__seal_pg), false)) {
			mpk__seal_pg.s.ro = false;
			goto undo;
		}
		return 0;
	}
	if (protect(&mpk__seal_pg, sizeof(mpk__seal_pg), true))
		return -1;
	mpk__seal_pg.s.ro = false;
	if (protect(mpk__tag_root, sizeof(mpk__tag_root), true) || leaves(true))
		return -1; /* left read-only: the next write faults, never a silent one */
	return 0;
undo: {
		int err = errno;
		(void)!protect(mpk__tag_root, sizeof(mpk__tag_root), true);
		(void)!leaves(true);
		errno = err;
		return -1;
	}
}
