/* SPDX-License-Identifier: MIT */
/*
 * Vaults' per-thread lists (see heap.h): a secret freed goes, wiped, into
 * the freeing thread's list for its vault, and the next secret of that
 * class comes out of it, with no lock, so threads do not queue on the
 * vault's one arena.  The ordinary caches' fast paths read a header to
 * learn a block's class and to tell a cached block from a live one; vault
 * blocks have none, so the class comes from the run (stable while the
 * block is in use, and a listed block stays in use for its arena) and
 * liveness from the run's live bits, which every thread changes
 * atomically: a second free, from any thread, finds its bit clear.
 * Listed blocks stay locked in memory with their runs, and are zero.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "heap.h"

#define VL_MAX 16 /* blocks listed per class */
#define VL_BYTES 4096 /* ... and their bytes, beyond one: what lists keep locked */

/* The live bit of slab block a of h: its word and mask, or NULL. */
static uint64_t *live_bit(struct heap *h, uintptr_t a, uint64_t *mask, size_t *cap)
{
	struct chunk *c = mpk__map_find(a);
	struct run *r;
	unsigned i;

	if (!c || c->heap != h || !(*cap = mpk__slab_slot(c, a, &r, &i)))
		return NULL;
	*mask = 1ull << (i % 64);
	return &r->live[i / 64];
}

static void mark(const void *p)
{
	struct chunk *c = mpk__map_find((uintptr_t)p);
	uint64_t mask;
	size_t cap;
	uint64_t *w = c ? live_bit(c->heap, (uintptr_t)p, &mask, &cap) : NULL;

	if (w)
		__atomic_fetch_or(w, mask, __ATOMIC_RELAXED);
}

void mpk__vl_handed(struct mpk_domain *d, const void *p)
{
	struct tcache *tc = mpk__tc_vault(d);

	mark(p);
	/* The slow path locked the vault's runs in this process (after a
	 * fork: again): the thread's listed blocks are locked too. */
	if (tc)
		tc->gen = __atomic_load_n(&mpk__fork_gen, __ATOMIC_RELAXED);
}

void *mpk__vl_alloc(struct mpk_domain *d, size_t len)
{
	if (len > SMALL_MAX)
		return NULL;
	struct tcache *tc = mpk__tc_vault(d);
	unsigned cls = mpk__class_of16[(len + 15) >> 4];
	/* A forked child: the slow path locks the vault's runs again first. */
	if (!tc || !tc->n[cls] || tc->gen != __atomic_load_n(&mpk__fork_gen, __ATOMIC_RELAXED))
		return NULL;
	unsigned n = tc->n[cls];
	uintptr_t p = tc->slot[cls][n - 1] ^ tc->mkey;
	if (p & 15) {
		tc->n[cls] = 0; /* overwritten without the key: dropped */
		return NULL;
	}
	tc->n[cls] = (uint8_t)(n - 1);
	mark((void *)p);
	return (void *)p;
}

int mpk__vl_free(struct heap *h, void *p, struct mpk_misuse *m)
{
	uintptr_t a = (uintptr_t)p;
	uint64_t mask;
	size_t cap;
	uint64_t *w = live_bit(h, a, &mask, &cap);

	if (!w)
		return VL_SLOW; /* big and page-run blocks, and misuse */
	/* Cleared first: a free racing this one, or any later one, sees
	 * the block is no longer the user's. */
	if (!(__atomic_fetch_and(w, ~mask, __ATOMIC_ACQ_REL) & mask)) {
		mpk__misuse_fill(m, MPK_MISUSE_DOUBLE_FREE, "mpk_secret_free", p, h);
		return MPK_MISUSE_DOUBLE_FREE;
	}
	struct tcache *tc = mpk__tc_attach(h);
	unsigned cls = mpk__class_of16[cap >> 4];
	int rc;
	unsigned lim = cap < VL_BYTES / VL_MAX ? VL_MAX : cap < VL_BYTES ? VL_BYTES / cap : 1;
	if (!tc || tc->n[cls] >= lim) {
		/* The list is full: back to the arena, wiped there. */
		if ((rc = mpk__heap_release(h, p, m, "mpk_secret_free")))
			__atomic_fetch_or(w, mask, __ATOMIC_RELAXED); /* still the user's */
		return rc;
	}
	mpk_scope s;
	if (mpk__heap_reach(h->domain, MPK_RW, &s)) {
		__atomic_fetch_or(w, mask, __ATOMIC_RELAXED);
		return -1;
	}
	explicit_bzero(p, cap);
	mpk__heap_leave(&s);
	tc->slot[cls][tc->n[cls]++] = a ^ tc->mkey;
	return 0;
}

int mpk__vl_live(struct heap *h, const void *p, const uint64_t **w, uint64_t *mask)
{
	size_t cap;

	if (!(*w = live_bit(h, (uintptr_t)p, mask, &cap)))
		return -1;
	return !!(__atomic_load_n(*w, __ATOMIC_RELAXED) & *mask);
}

/* Listed blocks go back through the slow free, which finds them in use
 * (and wipes them again: a no-op on zero bytes, but it needs the rights). */
unsigned mpk__vl_flush(struct tcache *tc)
{
	struct mpk_misuse m;
	unsigned all = 0;

	for (unsigned c = 0; c < NCLASSES; c++) {
		unsigned n = tc->n[c];
		tc->n[c] = 0;
		all += n;
		for (unsigned i = 0; i < n; i++) {
			uintptr_t a = tc->slot[c][i] ^ tc->mkey;
			if (!(a & 15) && mpk__chunk_tag(a) == tc->uid)
				(void)mpk__heap_release(tc->heap, (void *)a, &m, "mpk_secret_free");
		}
	}
	return all;
}
