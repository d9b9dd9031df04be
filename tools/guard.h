/* SPDX-License-Identifier: MIT */
/*
 * What libmpkit-guard.so's parts share (docs/guard.md): the gate's
 * descriptor per patched function, the gate's entry points, the patcher.
 */
#ifndef MPK_GUARD_H
#define MPK_GUARD_H

#include <stddef.h>
#include <stdint.h>

#include "guard_opts.h"
#include "mpkit.h"

/* The helper's thread-local variables.  glibc: initial-exec, so that no
 * __tls_get_addr() call (which may allocate, for a module opened later)
 * runs in the gate or a signal handler; a preloaded library's TLS is
 * static anyway.  musl refuses initial-exec TLS in an object opened by
 * dlopen() (mpk_guard_library()) and never allocates in __tls_get_addr()
 * (it makes every thread's dynamic TLS at dlopen()): the default model. */
#ifdef __GLIBC__
#define GUARD_TLS __thread __attribute__((tls_model("initial-exec")))
#else
#define GUARD_TLS __thread
#endif

/* At most this many libraries guarded at once (MPKIT_GUARD_LIB's list):
 * hw has 15 keys for every domain of the process. */
#define GUARD_LIBS 8

/* A guarded library, as found loaded (guard_preload.c); guarded once
 * domain is set, and never unset. */
struct guard_lib {
	const char *want;
	char path[4096];
	const char *file; /* path's last part */
	int index;        /* in guard_libs[] */
	int found;        /* loaded, at startup or by dlopen() */
	mpk_domain *domain;
	int outside;    /* its domain's rights outside it: MPK_READ, MPK_NONE (deny=all) */
	int use_heap;   /* its blocks in its domain (heap) */
	int report;     /* accesses from outside reported, let through (--report) */
	mpk_heap *heap; /* made under use_heap (guard_heap.c) */
	int nrules;     /* its out= and keep= words, over guard_hands_out() */
	struct guard_rule rules[GUARD_RULES];
	uintptr_t base, data_lo, data_hi, text_lo, text_hi;
	uintptr_t tail_lo, tail_hi; /* the data left out of the domain */
};

/* MPKIT_GUARD_LIB's libraries, in its order; guard_nlibs of them. */
extern struct guard_lib guard_libs[GUARD_LIBS];
extern int guard_nlibs;
/* The guarded library whose domain is d, or whose text holds pc; NULL. */
struct guard_lib *guard_lib_of(const mpk_domain *d);
struct guard_lib *guard_lib_at(uintptr_t pc);

/* One per patched export: the gate stub loads its address into %r11. */
struct guard_fn {
	uint8_t *rest; /* the displaced instructions, then a jump back */
	const char *name;
	struct guard_lib *lib; /* whose domain the gate opens */
	int hands_out;         /* it allocates for its caller: its name says so (guard_heap.c), or out= */
	struct guard_fn *next; /* every descriptor, kept for good (guard_patch.c) */
};

/* The ELF file path mapped read-only, its section headers inside it:
 * the mapping (*len bytes), or NULL with errno (guard_preload.c). */
const uint8_t *guard_map_elf(const char *path, size_t *len);

/* Faults in the domain (guard_report.c): mpkit's fault handler, with
 * the line that names what was written ahead of its report; l->report
 * set (--report), accesses from outside reported and let through.  0,
 * or -1 with errno. */
int guard_report_start(struct guard_lib *l);
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

/* Whether the calling thread is inside a gate into d's library
 * (guard_gate.c; async-signal-safe). */
int guard_inside(const mpk_domain *d);
/* Where the innermost gate's callee returns to, NULL outside every gate;
 * the innermost gate's function;
 * the function of l's innermost gate entered from outside l's
 * text, NULL if none (guard_gate.c). */
void *guard_inner_return(void);
const struct guard_fn *guard_inner_fn(void);
const struct guard_fn *guard_entry_fn(const struct guard_lib *l);

/* The library's heap (guard_heap.c): made when the library is guarded,
 * under l->use_heap (1 made, 0 not asked for, -1 with errno);
 * whether an address of l's domain lies outside
 * its data (a heap block: guard_report.c names it so). */
int guard_heap_start(struct guard_lib *l);
int guard_heap_block(const struct guard_lib *l, uintptr_t a);
/* Whether an export of that name allocates for its caller. */
int guard_hands_out(const char *name);

/* The library heaps' blocks by address (guard_blocks.c).  guard_heap.c
 * brackets each heap call that hands out or takes back a block: begin()
 * before it, forgetting the block to go back (its size, or -1 if not
 * recorded; NULL: none), end() after it, recording the block handed out
 * (start, size asked for; NULL: none).  start() registers the fork
 * handlers.  find() says which block address a is in, async-signal-safe
 * (no lock, no allocation). */
enum {
	GUARD_BLOCK_UNKNOWN, /* not known: the heap was changing */
	GUARD_BLOCK_IN,      /* in the block at start, of size bytes */
	GUARD_BLOCK_PAST,    /* in no block: past the end of that one */
	GUARD_BLOCK_FREE,    /* in no block, none within 64 KiB below */
};
struct guard_block {
	int kind;
	uintptr_t start;
	size_t size;
};
void guard_blocks_start(void);
size_t guard_blocks_begin(const void *forget);
void guard_blocks_end(const void *p, size_t n);
void guard_blocks_find(uintptr_t a, struct guard_block *b);

/* MPKIT_GUARD_STATS (guard_stats.c): the calling thread's calls through
 * the gate and those that opened the domain, per library (guard_gate.c);
 * set when the counts are to be written; a thread's first call; the
 * lines at exit. */
extern GUARD_TLS unsigned long guard_calls[GUARD_LIBS],
	guard_opens[GUARD_LIBS];
extern int guard_stats_on;
void guard_stats_start(void);
void guard_stats_thread(void);
void guard_stats_end(void);

/* mpk_guard_library()'s entry point (guard_preload.c): 0, or -1 with errno. */
int mpkit_guard_api(const char *name, unsigned flags);

/* The near mapping the stubs and trampolines live in (within 2 GiB of
 * the library's text): 0, or -1 with errno. */
int guard_patch_begin(uintptr_t text_lo, uintptr_t text_hi);
/* Send fn (size bytes of code) to a gate, its blocks the caller's if
 * hands_out: its descriptor, or NULL with *why saying why it was left
 * alone. */
const struct guard_fn *guard_patch(struct guard_lib *l, const char *name, int hands_out, uint8_t *fn, size_t size,
				   const char **why);
/* The near mapping back to read+execute. */
int guard_patch_end(void);

#endif
