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
	int hands_out; /* its name says it allocates for its caller (guard_heap.c) */
};

/* The guarded library's domain (guard_preload.c). */
extern mpk_domain *guard_domain;

/* The guarded library, as found loaded (guard_preload.c). */
struct guard_lib {
	const char *want;
	char path[4096];
	uintptr_t base, data_lo, data_hi, text_lo, text_hi;
	uintptr_t tail_lo, tail_hi; /* the data left out of the domain */
};

/* The ELF file path mapped read-only, its section headers inside it:
 * the mapping (*len bytes), or NULL with errno (guard_preload.c). */
const uint8_t *guard_map_elf(const char *path, size_t *len);

/* Faults in the domain (guard_report.c): mpkit's fault handler, with
 * the line that names what was written ahead of its report; report set
 * (--report), accesses from outside reported and let through.  0, or -1
 * with errno. */
int guard_report_start(const struct guard_lib *l, int report);
/* Every instruction that wrote, with its count, on stderr. */
void guard_report_end(void);

/* The common gate (guard_gate.c): the stubs jump there; it calls these
 * two on the way in and out. */
void guard_gate(void);
void *guard_enter(struct guard_fn *fn, void **slot);
void *guard_leave(void);
/* A longjmp to stack pointer sp: the gates it leaves popped, their
 * outermost's rights back (guard_gate.c). */
void guard_unwind(uintptr_t sp);

/* Where the innermost gate's callee returns to, NULL outside every gate;
 * the function of the innermost gate entered from outside the library's
 * text, NULL if none (guard_gate.c). */
void *guard_inner_return(void);
const struct guard_fn *guard_entry_fn(void);

/* The library's heap (guard_heap.c): made when the library is guarded,
 * under MPKIT_GUARD_HEAP=1 (1 made, 0 not asked for, -1 with errno);
 * whether an address of the domain lies outside
 * the library's data (a heap block: guard_report.c names it so). */
int guard_heap_start(const struct guard_lib *l);
int guard_heap_block(uintptr_t a);
/* Whether an export of that name allocates for its caller. */
int guard_hands_out(const char *name);

/* The rights outside the library (MPK_READ, or MPK_NONE), and whether
 * pc lies in its text (guard_preload.c; 0 while it is not guarded). */
int guard_outside(void);
int guard_in_text(uintptr_t pc);

/* MPKIT_GUARD_STATS (guard_stats.c): the calling thread's calls through
 * the gate and those that opened the domain (guard_gate.c); set when the
 * counts are to be written; a thread's first call; the line at exit. */
extern __thread __attribute__((tls_model("initial-exec"))) unsigned long guard_calls, guard_opens;
extern int guard_stats_on;
void guard_stats_start(void);
void guard_stats_thread(void);
void guard_stats_end(const char *lib);

/* mpk_guard_library()'s entry point (guard_preload.c): 0, or -1 with errno. */
int mpkit_guard_api(const char *name, unsigned flags);

/* The near mapping the stubs and trampolines live in (within 2 GiB of
 * the library's text): 0, or -1 with errno. */
int guard_patch_begin(uintptr_t text_lo, uintptr_t text_hi);
/* Send fn (size bytes of code) to a gate: 0, or -1 with *why saying why
 * it was left alone. */
int guard_patch(const char *name, uint8_t *fn, size_t size, const char **why);
/* The near mapping back to read+execute. */
int guard_patch_end(void);

#endif
