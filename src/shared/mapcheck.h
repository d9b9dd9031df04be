/* SPDX-License-Identifier: MIT */
/*
 * Ranges against the mappings that hold them: what mpk_audit() (the
 * library, for its own process) and `mpkit maps PID --check` (the tool,
 * from another process's registry) both do.  Plain C on libc and the maps
 * parser beside it; never allocates.
 */
#ifndef MPK_SHARED_MAPCHECK_H
#define MPK_SHARED_MAPCHECK_H

#include <stddef.h>
#include <stdint.h>

/* A range and the state its pages should have. */
struct mpk_mapcheck_want {
	uint64_t lo, hi;  /* [lo, hi) */
	int key;          /* the key its pages should carry (0: none), -1 any */
	int prot;         /* PROT_* they should have */
	const void *tag;  /* the caller's */
	uint64_t pos;     /* mpk_mapcheck()'s: how far mappings cover it */
};

/* Called for each piece of a want that differs: the key found (-1: the
 * kernel does not report keys, or nothing is mapped) and protection
 * (-1: nothing is mapped).  Neighbouring pieces of one want found the
 * same come as one. */
typedef void (*mpk_mapcheck_fn)(const struct mpk_mapcheck_want *w, uint64_t lo, uint64_t hi, int key,
				int prot, void *arg);

/* Compare w[0..n) (sorted by lo, not overlapping) with the mappings of
 * pid ("self", a number, or NULL for self) in /proc/PID/smaps.  0, or
 * -1/errno when it cannot be read. */
int mpk_mapcheck(struct mpk_mapcheck_want *w, size_t n, const char *pid, mpk_mapcheck_fn fn, void *arg);

#endif
