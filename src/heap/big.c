/* SPDX-License-Identifier: MIT */
/*
 * Blocks with a region of their own: those bigger than 128 KiB, and
 * every block of a guarded heap.  A guarded block is a window region: its
 * guards are the reserved pages around it (outside the domain, so no
 * rights change opens them), and it lies flush against the one after it
 * (MPK_HEAP_GUARDED: an overflow faults at once) or the one before it
 * (MPK_HEAP_GUARDED_BELOW).  One table
 * for all heaps, keyed by the user pointer, under the meta lock; a freed
 * entry stays as a tombstone so a second free of it is named a double free.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "heap.h"

/* The table, its size, its entries and live ones: in the area's state
 * (sealed with it).  Under the meta lock, the metadata open. */
#define BIGS (*mpk__meta_st())

/* The table went with the area's state. */
void mpk__big_reset(void)
{
}

static size_t slot(uintptr_t p)
{
	uint64_t x = (uint64_t)p * 0x9e3779b97f4a7c15ull;
	return (size_t)(x ^ (x >> 29)) & (BIGS.big_cap - 1);
}

struct big *mpk__big_find(uintptr_t p)
{
	struct big *tab = BIGS.big_tab;

	if (!tab)
		return NULL;
	for (size_t i = slot(p);; i = (i + 1) & (BIGS.big_cap - 1)) {
		if (tab[i].state == BIG_EMPTY)
			return NULL;
		if (tab[i].p == p)
			return &tab[i];
	}
}

/* A new table of n entries holding the live ones (tombstones go). */
static int rehash(size_t n)
{
	struct big *old = BIGS.big_tab, *t = mpk__meta_alloc(n * sizeof(*t));
	size_t oldcap = BIGS.big_cap;

	if (!t)
		return -1;
	BIGS.big_tab = t;
	BIGS.big_cap = n;
	BIGS.big_used = 0;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i].state == BIG_LIVE) {
			size_t j = slot(old[i].p);
			while (t[j].state != BIG_EMPTY)
				j = (j + 1) & (n - 1);
			t[j] = old[i];
			BIGS.big_used++;
		}
	if (old)
		mpk__meta_free(old, oldcap * sizeof(*old));
	return 0;
}

/* Room for one more entry: 0, or -1 with ENOMEM. */
static int reserve(void)
{
	if (BIGS.big_tab && 4 * (BIGS.big_used + 1) <= 3 * BIGS.big_cap)
		return 0;
	size_t n = BIGS.big_cap ? BIGS.big_cap : 64;
	while (4 * (BIGS.big_live + 1) > n)
		n *= 2;
	return rehash(n);
}

struct big *mpk__big_insert(uintptr_t p)
{
	struct big *b = mpk__big_find(p);

	if (!b) {
		if (reserve())
			return NULL;
		size_t i = slot(p);
		while (BIGS.big_tab[i].state != BIG_EMPTY)
			i = (i + 1) & (BIGS.big_cap - 1);
		b = &BIGS.big_tab[i];
		BIGS.big_used++;
	}
	memset(b, 0, sizeof(*b));
	b->p = p;
	b->state = BIG_LIVE;
	BIGS.big_live++;
	return b;
}

void mpk__big_remove(struct big *b)
{
	b->state = BIG_FREED;
	BIGS.big_live--;
}

static uintptr_t round_up(uintptr_t x, size_t a)
{
	return (x + a - 1) & ~(uintptr_t)(a - 1);
}

/* A guarded block: reserve, trim to guard + data + guard, adopt the data. */
static int map_guarded(struct heap *h, size_t size, size_t align, struct big *b)
{
	size_t page = mpk__page();
	bool below = h->flags & MPK_HEAP_GUARDED_BELOW;
	size_t data = round_up(size + (!below && align > page ? align : 0), page);
	uintptr_t start = (uintptr_t)mpk__map_fresh(h->domain, data, below ? align : page, 0);

	if (!start)
		return -1;
	b->p = below ? start : (start + data - size) & ~(uintptr_t)(align - 1);
	b->map = b->region = start;
	b->maplen = b->reglen = data;
	return 0;
}

#define KEEP_MAX ((size_t)8 << 20) /* bigger regions are not kept */

/* A kept region for len bytes (*lenp: its length): the smallest that is
 * long enough (a block in a longer one grows in place), else the newest
 * mremapped to len (its resident pages stay).  0 if none. */
static uintptr_t kept(struct arena *a, size_t len, size_t *lenp)
{
	unsigned i, best = a->ncache;

	for (i = 0; i < a->ncache; i++)
		if (a->cache[i].len >= len &&
		    (best == a->ncache || a->cache[i].len < a->cache[best].len))
			best = i;
	if (best == a->ncache && a->ncache)
		best = a->ncache - 1;
	if (best == a->ncache)
		return 0;
	uintptr_t r = a->cache[best].region;
	size_t have = a->cache[best].len;
	if (have < len) {
		mpk__san_forget(r, have);
		if (!(r = (uintptr_t)mpk__remap_owned(a->heap->domain, (void *)r, len)))
			return 0; /* (left open to sanitizers: unmapped soon) */
		mpk__san_poison(r, len);
		have = len;
	}
	for (i = best; i + 1 < a->ncache; i++)
		a->cache[i] = a->cache[i + 1];
	a->ncache--;
	*lenp = have;
	return r;
}

static int map_big(struct arena *a, size_t size, size_t align, struct big *b)
{
	struct heap *h = a->heap;
	size_t page = mpk__page(), hdr = mpk__vault(h) ? 0 : HDR;
	size_t len = round_up(hdr + size + (align > 16 ? align : 0), page), have;
	uintptr_t start;
	int err;

	if (!mpk__vault(h) && (start = kept(a, len, &have))) {
		b->p = round_up(start + hdr, align);
		b->map = b->region = start;
		b->maplen = b->reglen = have;
		b->reused = true;
		return 0;
	}
	/* A vault's: memfd_secret where the kernel has it (core.h). */
	start = (uintptr_t)mpk__alloc_region(h->domain, len, MPK__REGION_OWNED | mpk__vault_region(h, false));
	if (!start)
		return -1;
	if (!mpk__vault(h))
		mpk__san_poison(start, len); /* the block opens its bytes */
	else if (mpk__heap_lock_pages(h, (void *)start, len)) {
		err = errno;
		mpk__free_owned(h->domain, (void *)start);
		errno = err;
		return -1;
	}
	b->p = round_up(start + hdr, align);
	b->map = b->region = start;
	b->maplen = b->reglen = len;
	return 0;
}

void *mpk__big_alloc(struct arena *a, size_t size, size_t align, struct big *out)
{
	struct heap *h = a->heap;
	struct big nb = { .heap = h, .size = size };
	struct big *b;
	int err;

	if ((h->flags & HEAP_GUARDS) ? map_guarded(h, size, align, &nb)
				     : map_big(a, size, align, &nb))
		return NULL;
	pthread_mutex_lock(&mpk__meta_lock);
	b = mpk__big_insert(nb.p);
	if (b) {
		nb.state = BIG_LIVE;
		*b = nb;
	}
	err = errno;
	pthread_mutex_unlock(&mpk__meta_lock);
	if (!b) {
		mpk__big_unmap(h, &nb);
		errno = err;
		return NULL;
	}
	mpk__arena_mapped(a, nb.reglen, 0);
	*out = nb;
	return (void *)nb.p;
}

/* Undo a big block's mappings (its entry is gone or was never made). */
void mpk__big_unmap(struct heap *h, const struct big *b)
{
	mpk__vault_unlock(h, (void *)b->region, b->reglen);
	/* Its guards are the window's reserved pages: they stay. */
	mpk__san_forget(b->region, b->reglen);
	mpk__free_owned(h->domain, (void *)b->region);
}

void mpk__big_free(struct arena *a, const struct big *b)
{
	struct heap *h = a->heap;

	mpk__arena_mapped(a, 0, b->reglen);
	if (!mpk__heap_headers(h) || b->reglen > KEEP_MAX) {
		mpk__big_unmap(h, b);
		return;
	}
	if (a->ncache == sizeof(a->cache) / sizeof(a->cache[0])) {
		mpk__san_forget(a->cache[0].region, a->cache[0].len);
		mpk__free_owned(h->domain, (void *)a->cache[0].region); /* the oldest */
		memmove(&a->cache[0], &a->cache[1], --a->ncache * sizeof(a->cache[0]));
	}
	a->cache[a->ncache].region = b->region;
	a->cache[a->ncache++].len = b->reglen;
}

void mpk__bigs_trim(struct arena *a)
{
	while (a->ncache) {
		a->ncache--;
		mpk__san_forget(a->cache[a->ncache].region, a->cache[a->ncache].len);
		mpk__free_owned(a->heap->domain, (void *)a->cache[a->ncache].region);
	}
}

void mpk__bigs_release(struct heap *h)
{
	mpk__bigs_trim(&h->arenas[0]);
	pthread_mutex_lock(&mpk__meta_lock);
	for (size_t i = 0; i < BIGS.big_cap; i++)
		if (BIGS.big_tab[i].state == BIG_LIVE && BIGS.big_tab[i].heap == h) {
			mpk__big_unmap(h, &BIGS.big_tab[i]);
			mpk__big_remove(&BIGS.big_tab[i]);
		}
	pthread_mutex_unlock(&mpk__meta_lock);
}

int mpk__bigs_relock(struct heap *h)
{
	int rc = 0;

	pthread_mutex_lock(&mpk__meta_lock);
	for (size_t i = 0; i < BIGS.big_cap && !rc; i++)
		if (BIGS.big_tab[i].state == BIG_LIVE && BIGS.big_tab[i].heap == h)
			rc = mpk__heap_lock_pages(h, (void *)BIGS.big_tab[i].region, BIGS.big_tab[i].reglen);
	pthread_mutex_unlock(&mpk__meta_lock);
	return rc;
}

uintptr_t mpk__big_resize(struct arena *a, uintptr_t p, size_t size)
{
	struct heap *h = a->heap;
	size_t page = mpk__page();
	struct big nb;

	/* Room for the entry under the new address first: nothing can fail
	 * once the block has moved. */
	pthread_mutex_lock(&mpk__meta_lock);
	int full = reserve();
	nb = *mpk__big_find(p);
	pthread_mutex_unlock(&mpk__meta_lock);
	if (full)
		return 0;
	size_t off = p - nb.region, len = round_up(off + size, page);
	mpk__san_forget(nb.region, nb.reglen);
	uintptr_t r = (uintptr_t)mpk__remap_owned(h->domain, (void *)nb.region, len);
	if (!r) {
		mpk__san_poison(nb.region, nb.reglen);
		mpk__san_alloc(p, nb.reglen - off); /* as it was */
		return 0;
	}
	mpk__san_poison(r, len); /* the caller opens the block */
	mpk__arena_mapped(a, len, nb.reglen);
	a->bytes += len - nb.reglen;
	nb.p = r + off;
	nb.map = nb.region = r;
	nb.maplen = nb.reglen = len;
	nb.size = size;
	pthread_mutex_lock(&mpk__meta_lock);
	if (nb.p != p) {
		mpk__big_remove(mpk__big_find(p)); /* a tombstone, as a free */
		*mpk__big_insert(nb.p) = nb;
	} else {
		*mpk__big_find(p) = nb;
	}
	pthread_mutex_unlock(&mpk__meta_lock);
	return nb.p;
}
