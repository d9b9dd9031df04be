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
 * Listed blocks stay locked in memory with their runs, and are zero.  A
 * free that leaves its run with no secret of the user's gives it back,
 * with the thread's listed blocks in it: lists keep runs that hold
 * secrets, and one emptied run a thread (its latest; in a memfd_secret
 * chunk, only in its first VAULT_KEEP bytes), where an alloc+free pair
 * goes on without a lock.
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

/*
 * The lists are in open memory (a mapping per thread): an entry is a hint,
 * the run's bits (in the metadata) decide.  A block is the user's only
 * once its live bit went from clear to set here (claim()), and a listed
 * block goes back to its arena only once the freeing side set it (so the
 * slab's free, which clears it again after the block is free, cannot meet
 * a list taking it): of two lists naming one block, one planted, one
 * wins and the other's entry is dropped.
 */

/* Claim slab block p of d's vault (bit clear to set): its live word and
 * mask, or NULL (not such a block, or claimed already). */
static uint64_t *claim(struct mpk_domain *d, uintptr_t p, uint64_t *mask)
{
	struct chunk *c = mpk__map_find(p);
	size_t cap;
	uint64_t *w = c && mpk__vault(c->heap) && (!d || c->heap->domain == d)
			      ? live_bit(c->heap, p, mask, &cap)
			      : NULL;

	if (!w || (__atomic_fetch_or(w, *mask, __ATOMIC_ACQ_REL) & *mask))
		return NULL;
	return w;
}

static void unclaim(uint64_t *w, uint64_t mask)
{
	__atomic_fetch_and(w, ~mask, __ATOMIC_RELEASE);
}

/* Take listed block p for the user: claimed, and in use for its arena
 * (its slab's free bit clear, read after the claim: a block given back
 * meanwhile is seen free). */
static bool take(struct mpk_domain *d, uintptr_t p)
{
	uint64_t mask, *w = claim(d, p, &mask);

	if (!w)
		return false;
	const uint64_t *free_bits = (const uint64_t *)((const char *)w - offsetof(struct run, live) +
						       offsetof(struct run, bits));
	if (__atomic_load_n(free_bits, __ATOMIC_ACQUIRE) & mask) {
		unclaim(w, mask);
		return false;
	}
	return true;
}

/* Give listed (or just freed) block p of h back to its arena, claimed
 * first: a block a list took meanwhile is the user's, and stays. */
static int give_back(struct heap *h, uintptr_t p, struct mpk_misuse *m)
{
	uint64_t mask, *w = claim(h->domain, p, &mask);

	if (!w)
		return 0;
	int rc = mpk__heap_release(h, (void *)p, m, "mpk_secret_free");
	if (rc)
		unclaim(w, mask); /* still there: not given back */
	return rc;
}

bool mpk__vl_handed(struct mpk_domain *d, const void *p)
{
	struct tcache *tc = mpk__tc_vault(d);
	uint64_t mask;
	size_t cap;
	struct chunk *c = mpk__map_find((uintptr_t)p);

	/* The slow path locked the vault's runs in this process (after a
	 * fork: again): the thread's listed blocks are locked too. */
	if (tc)
		tc->gen = __atomic_load_n(&mpk__fork_gen, __ATOMIC_RELAXED);
	if (!c || !live_bit(c->heap, (uintptr_t)p, &mask, &cap))
		return true; /* not a slab block: no live bit */
	return claim(d, (uintptr_t)p, &mask) != NULL;
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
	if ((p & 15) || !take(d, p)) {
		tc->n[cls] = 0; /* overwritten, or planted: dropped */
		return NULL;
	}
	tc->n[cls] = (uint8_t)(n - 1);
	return (void *)p;
}

/* Whether slab run r holds no secret of the user's.  Word by word: a
 * race with another thread's alloc or free makes it keep a run or give
 * its listed blocks back early, nothing worse. */
static bool run_unused(const struct run *r)
{
	for (unsigned k = 0; k < SLAB_BLOCKS_MAX / 64; k++)
		if (__atomic_load_n(&r->live[k], __ATOMIC_RELAXED))
			return false;
	return true;
}

/* tc's listed blocks of class cls in [lo, hi) go back to the arena. */
static void drop_range(struct tcache *tc, unsigned cls, uintptr_t lo, uintptr_t hi)
{
	uintptr_t out[VL_MAX];
	unsigned n = tc->n[cls], kept = 0, k = 0;
	struct mpk_misuse m;

	for (unsigned j = 0; j < n; j++) {
		uintptr_t a = tc->slot[cls][j] ^ tc->mkey;
		if (a - lo < hi - lo && !(a & 15) && k < VL_MAX)
			out[k++] = a;
		else
			tc->slot[cls][kept++] = tc->slot[cls][j];
	}
	tc->n[cls] = (uint8_t)kept;
	for (unsigned j = 0; j < k; j++)
		(void)give_back(tc->heap, out[j], &m);
}

/* A free left slab run r (block class cls) with no secret: whether the
 * thread's list may keep the freed block, the run's being its kept one
 * now; if not, its listed blocks in r went back. */
static bool keep_run(struct tcache *tc, struct chunk *c, struct run *r, unsigned cls)
{
	uintptr_t lo = run_addr(c, r), hi = lo + ((uintptr_t)r->pages << mpk__heap_page_shift);

	if (lo == tc->vl_keep && cls == tc->vl_keep_cls)
		return true;
	/* memfd_secret is charged as far as the chunk's mapping goes. */
	if (c->secret && (size_t)r->page + r->pages > VAULT_KEEP >> mpk__heap_page_shift) {
		drop_range(tc, cls, lo, hi);
		return false;
	}
	if (tc->vl_keep)
		drop_range(tc, tc->vl_keep_cls, tc->vl_keep, tc->vl_keep_end);
	tc->vl_keep = lo;
	tc->vl_keep_end = hi;
	tc->vl_keep_cls = cls;
	return true;
}

int mpk__vl_free(struct heap *h, void *p, struct mpk_misuse *m)
{
	uintptr_t a = (uintptr_t)p;
	struct chunk *c = mpk__map_find(a);
	struct run *r;
	unsigned i;
	size_t cap;

	if (!c || c->heap != h || !(cap = mpk__slab_slot(c, a, &r, &i)))
		return VL_SLOW; /* big and page-run blocks, and misuse */
	uint64_t mask = 1ull << (i % 64), *w = &r->live[i / 64];
	/* Cleared first: a free racing this one, or any later one, sees
	 * the block is no longer the user's. */
	uint64_t old = __atomic_fetch_and(w, ~mask, __ATOMIC_ACQ_REL);
	if (!(old & mask)) {
		mpk__misuse_fill(m, MPK_MISUSE_DOUBLE_FREE, "mpk_secret_free", p, h);
		return MPK_MISUSE_DOUBLE_FREE;
	}
	struct tcache *tc = mpk__tc_attach(h);
	unsigned cls = mpk__class_of16[cap >> 4];
	int rc;
	unsigned lim = cap < VL_BYTES / VL_MAX ? VL_MAX : cap < VL_BYTES ? VL_BYTES / cap : 1;
	/* The block is in use until it goes back: r stays.  An emptied run
	 * first, which may take listed blocks off. */
	if (!tc || (!(old & ~mask) && run_unused(r) && !keep_run(tc, c, r, cls)) ||
	    tc->n[cls] >= lim) {
		/* Full, or not kept: back to the arena, wiped there. */
		if (!(__atomic_fetch_or(w, mask, __ATOMIC_ACQ_REL) & mask) &&
		    (rc = mpk__heap_release(h, p, m, "mpk_secret_free")))
			return rc; /* still the user's (its bit set again) */
		return 0;
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
			if (!(a & 15))
				(void)give_back(tc->heap, a, &m);
		}
	}
	return all;
}
