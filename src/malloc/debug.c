/* SPDX-License-Identifier: MIT */
/*
 * `mpkit run --debug` (MPKIT_MALLOC_DEBUG=1): each block's allocation
 * stack, and its free stack once freed, so that a misuse report says
 * where the block came from and where it went.  A table keyed by the
 * block's address, in memory of its own (never the heap's, never
 * malloc's), a spin lock around it; entries stay after the free (the
 * free stack is what a double free wants) and are reused when the
 * address is handed out again.  When the table is three-quarters full
 * new addresses are not recorded (said once, on stderr).  Off, none of
 * this runs: the calls are behind one flag.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mpkit.h"
#include "malloc.h"
#include "../shared/spin.h"
#include "../shared/trace.h"
#include "../shared/unwind.h"

#define DEPTH 12                /* frames kept per stack, mpkit's among them */
#define SLOTS ((size_t)1 << 21) /* address space only: pages come as touched */

struct rec {
	uintptr_t p;                /* 0: empty */
	bool freed;
	unsigned char nalloc, nfree;
	void *alloc[DEPTH], *free[DEPTH];
};

static struct rec *tab;
static size_t used;
static volatile int lock;
static bool full_said;

int mpk__dbg_init(void)
{
	void *m = mmap(NULL, SLOTS * sizeof(struct rec), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (m == MAP_FAILED)
		return -1;
	tab = m;
	return 0;
}

/* p's entry, or a free one for it (NULL: the table is full).  Lock held. */
static struct rec *find(uintptr_t p, bool make)
{
	uint64_t x = (uint64_t)p * 0x9e3779b97f4a7c15ull;

	for (size_t i = (size_t)(x ^ (x >> 29)) & (SLOTS - 1);; i = (i + 1) & (SLOTS - 1)) {
		if (tab[i].p == p)
			return &tab[i];
		if (tab[i].p)
			continue;
		if (!make || used >= SLOTS / 4 * 3)
			return NULL;
		used++;
		tab[i].p = p;
		return &tab[i];
	}
}

/* p's stack of allocation (freeing: of its free) is the caller's. */
static void record(void *p, bool freeing)
{
	void *f[DEPTH];
	int n;

	if (!p || !tab)
		return;
	n = mpk__bt(f, DEPTH);
	mpk__spin_lock(&lock);
	struct rec *r = find((uintptr_t)p, !freeing);
	if (r && !freeing) {
		memcpy(r->alloc, f, (size_t)n * sizeof(*f));
		r->nalloc = (unsigned char)n;
		r->nfree = 0;
		r->freed = false;
	} else if (r && !r->freed) { /* a second free keeps the first one's stack */
		memcpy(r->free, f, (size_t)n * sizeof(*f));
		r->nfree = (unsigned char)n;
		r->freed = true;
	}
	bool say = !r && !freeing && !full_said;
	full_said |= say;
	mpk__spin_unlock(&lock);
	if (say) {
		static const char msg[] = "libmpkit-malloc: --debug: the stack table is full: blocks "
					  "allocated from now on have no stacks in reports\n";
		(void)!write(2, msg, sizeof(msg) - 1);
	}
}

void mpk__dbg_alloc(void *p)
{
	record(p, false);
}

void mpk__dbg_free(void *p)
{
	record(p, true);
}

void mpk__dbg_describe(struct mpk__text *t, const void *p)
{
	struct rec r = { 0 };
	char head[96];
	struct mpk__text h = { head, sizeof(head), 0 };

	if (!tab)
		return;
	mpk__spin_lock(&lock);
	struct rec *e = find((uintptr_t)p, false);
	if (e)
		r = *e;
	mpk__spin_unlock(&lock);
	if (!e) {
		mpk__text_str(t, "mpkit:   no allocation of it was recorded (mpkit run --debug)\n");
		return;
	}
	mpk__text_str(&h, "mpkit:   ");
	mpk__text_hex(&h, (uintptr_t)p);
	mpk__text_str(&h, " was allocated");
	mpk__trace_format(t, r.alloc, r.nalloc, 0, head);
	if (r.freed)
		mpk__trace_format(t, r.free, r.nfree, 0, "mpkit:   and freed");
}
