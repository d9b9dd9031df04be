/* SPDX-License-Identifier: MIT */
/*
 * What libmpkit-guard.so's parts share (docs/guard.md): the gate's
 * descriptor per patched function, the gate's entry points, the patcher.
 */
#ifndef MPK_GUARD_H
#define MPK_GUARD_H

#include <stddef.h>
#include <stdint.h>

#include "mpkit.h"

/* One per patched export: the gate stub loads its address into %r11. */
struct guard_fn {
	uint8_t *rest; /* the displaced instructions, then a jump back */
	const char *name;
};

/* The guarded library's domain (guard_preload.c). */
extern mpk_domain *guard_domain;

/* The common gate (guard_gate.c): the stubs jump there; it calls these
 * two on the way in and out. */
void guard_gate(void);
void *guard_enter(struct guard_fn *fn, void **slot);
void *guard_leave(void);

/* The near mapping the stubs and trampolines live in (within 2 GiB of
 * the library's text): 0, or -1 with errno. */
int guard_patch_begin(uintptr_t text_lo, uintptr_t text_hi);
/* Send fn (size bytes of code) to a gate: 0, or -1 with *why saying why
 * it was left alone. */
int guard_patch(const char *name, uint8_t *fn, size_t size, const char **why);
/* The near mapping back to read+execute. */
int guard_patch_end(void);

#endif
