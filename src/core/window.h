/* SPDX-License-Identifier: MIT */
/*
 * Where domain memory lives: the single source of truth.
 *
 * Every region mpkit maps for a domain (mpk_alloc, heap chunks and big
 * blocks, vault memory) is carved out of a window: a large PROT_NONE,
 * MAP_NORESERVE reservation, aligned to MPK_WINDOW_SIZE.  Windows are added
 * (next to the last one where MAP_FIXED_NOREPLACE allows) when one is full
 * and are never given back.  Each carved unit is its pages plus one guard
 * page after them, and a window's first page is a guard, so neighbouring
 * regions are always separate VMAs with reserved PROT_NONE pages between
 * them (the reservation's VM_NORESERVE keeps them from merging).  The only
 * domain memory outside the windows is what mpk_adopt() took in and
 * mpk_map_file() mapped: those ranges are listed too.  Given back after
 * mpk_lockdown(), they stay reserved here as well (core.h: covered).
 *
 * Readers (the fault handler, mpk_domain_of, the lockdown filter builder)
 * take no lock: everything below marked signal-safe may run in a signal
 * handler.  Windows only ever get added.
 */
#ifndef MPK_WINDOW_H
#define MPK_WINDOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What layers above use of the windows (mpk__window_map/_unmap, the
 * ranges, the window lock) is declared in core.h; what tests and the
 * benchmark use (carving, the index, the cap) in testing.h. */
#include "core.h"
#include "testing.h"

/* 16 GiB per window (more for one huge region): small enough that the
 * reservation plus its alignment slack fits where address space is
 * limited, as under valgrind (32 GiB at most). */
#define MPK_WINDOW_SHIFT 34
#define MPK_WINDOW_SIZE ((uintptr_t)1 << MPK_WINDOW_SHIFT)
#define MPK_WINDOW_MAX 256

/* Move [old, old+old_len) from mpk__window_map() onto to, new_len bytes
 * carved by mpk__window_carve() (mremap: contents, key and protection go
 * along); old is reserved again.  0, or -1/errno with nothing changed. */
int mpk__window_move(void *old, size_t old_len, void *to, size_t new_len);

/* Whether addr is inside a window.  Signal-safe, one range check for an
 * address below or above every window. */
bool mpk__in_window(uintptr_t addr);

/* fork.c: the window lock anew in the child (the lock itself: core.h). */
void mpk__window_child(void);

/* ---- for region.c: the per-window table and the adopted list ---- */

struct mpk_region;
/* The window's first-level table (one word per 2 MiB granule) and its
 * base and size, for window i; NULL if i is not a window.  Signal-safe. */
uintptr_t *mpk__window_table(int i, uintptr_t *base, uintptr_t *size);
void mpk__ranges_changed(void);

#endif
