/* SPDX-License-Identifier: MIT */
/*
 * Blocks with a region of their own: those bigger than half a chunk, and
 * every block of a guarded heap.  A guarded block sits between two guard
 * pages (PROT_NONE mappings outside the domain, so no rights change opens
 * them), flush against the one after it (MPK_HEAP_GUARDED: an overflow
 * faults at once) or the one before it (MPK_HEAP_GUARDED_BELOW).  One table
 * for all heaps, keyed by the user pointer, under the meta lock; a freed
 * entry stays as a tombstone so a second free of it is named a double free.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "heap.h"
#include "os.h"

static struct big *tab; /* in the metadata area */
static size_t cap, used, live;

void mpk__big_reset(void)
{
	tab = NULL;
	cap = used = live = 0;
}

static size_t slot(uintptr_t p)
{
	uint64_t x = (uint64_t)p * 0x9e3779b97f4a7c15ull;
	return (size_t)(x ^ (x >> 29)) & (cap - 1);
}

struct big *mpk__big_find(uintptr_t p)
{
	if (!tab)
		return NULL;
	for (size_t i = slot(p);; i = (i + 1) & (cap - 1)) {
		if (tab[i].state == BIG_EMPTY)
			return NULL;
		if (tab[i].p == p)
			return &tab[i];
	}
}

/* A new table of n entries holding the live ones (tombstones go). */
static int rehash(size_t n)
{
	struct big *old = tab, *t = mpk__meta_alloc(n * sizeof(*t));
	size_t oldcap = cap;

	if (!t)
		return -1;
	tab = t;
	cap = n;
	used = 0;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i].state == BIG_LIVE) {
			size_t j = slot(old[i].p);
			while (t[j].state != BIG_EMPTY)
				j = (j + 1) & (cap - 1);
			t[j] = old[i];
			used++;
		}
	if (old)
		mpk__meta_free(old, oldcap * sizeof(*old));
	return 0;
}

struct big *mpk__big_insert(uintptr_t p)
{
	struct big *b = mpk__big_find(p);

	if (!b) {
		if (!tab || 4 * (used + 1) > 3 * cap) {
			size_t n = cap ? cap : 64;
			while (4 * (live + 1) > n)
				n *= 2;
			if (rehash(n))
				return NULL;
		}
		size_t i = slot(p);
		while (tab[i].state != BIG_EMPTY)
			i = (i + 1) & (cap - 1);
		b = &tab[i];
		used++;
	}
	memset(b, 0, sizeof(*b));
	b->p = p;
	b->state = BIG_LIVE;
	live++;
	return b;
}

void mpk__big_remove(struct big *b)
{
	b->state = BIG_FREED;
	live--;
}

static uintptr_t round_up(uintptr_t x, size_t a)
{
	return (x + a - 1) & ~(uintptr_t)(a - 1);
}

/* A guarded block: reserve, trim to guard + data + guard, adopt the data. */
static int map_guarded(struct heap *h, size_t size, size_t align, struct big *b)
{
	size_t page = mpk__page(), data = round_up(size, page);
	size_t len = data + 2 * page + (align > page ? align : 0);
	uintptr_t map = (uintptr_t)mpk_os_map(len, PROT_NONE), start, end, p;

	if (!map) {
		errno = ENOMEM;
		return -1;
	}
	if (h->flags & MPK_HEAP_GUARDED_BELOW) {
		start = round_up(map + page, align > page ? align : page);
		end = start + data;
		p = start;
	} else {
		end = map + len - page;
		p = (end - size) & ~(uintptr_t)(align - 1);
		start = p & ~(uintptr_t)(page - 1);
	}
	/* Keep one guard page on each side, give back the rest. */
	if (start - page > map)
		mpk_os_unmap((void *)map, start - page - map);
	if (end + page < map + len)
		mpk_os_unmap((void *)(end + page), map + len - end - page);
	if (mpk__adopt_fresh(h->domain, (void *)start, end - start)) {
		int err = errno;
		mpk_os_unmap((void *)(start - page), end - start + 2 * page);
		errno = err;
		return -1;
	}
	b->p = p;
	b->map = start - page;
	b->maplen = end - start + 2 * page;
	b->region = start;
	b->reglen = end - start;
	return 0;
}

static int map_big(struct heap *h, size_t size, size_t align, struct big *b)
{
	size_t page = mpk__page(), hdr = (h->flags & HEAP_SECRET) ? 0 : HDR;
	size_t len = round_up(hdr + size + (align > 16 ? align : 0), page);
	uintptr_t start = (uintptr_t)mpk__alloc_owned(h->domain, len);
	int err;

	if (!start)
		return -1;
	if (h->flags & HEAP_SECRET) {
		if (madvise((void *)start, len, MADV_DONTDUMP) ||
		    madvise((void *)start, len, MADV_WIPEONFORK) ||
		    mpk__heap_lock_pages(h, (void *)start, len)) {
			err = errno;
			mpk__free_owned(h->domain, (void *)start);
			errno = err;
			return -1;
		}
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
				     : map_big(h, size, align, &nb))
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
	a->mapped += nb.reglen;
	*out = nb;
	return (void *)nb.p;
}

/* Undo a big block's mappings (its entry is gone or was never made). */
void mpk__big_unmap(struct heap *h, const struct big *b)
{
	if (h->flags & HEAP_SECRET)
		mpk_os_munlock((void *)b->region, b->reglen);
	/* The region first (mpkit unmaps it), then each guard: unmapping the
	 * whole reservation could hit a mapping made in between. */
	mpk__free_owned(h->domain, (void *)b->region);
	if (b->map != b->region) {
		mpk_os_unmap((void *)b->map, b->region - b->map);
		uintptr_t end = b->region + b->reglen;
		mpk_os_unmap((void *)end, b->map + b->maplen - end);
	}
}

void mpk__bigs_release(struct heap *h)
{
	pthread_mutex_lock(&mpk__meta_lock);
	for (size_t i = 0; i < cap; i++)
		if (tab[i].state == BIG_LIVE && tab[i].heap == h) {
			mpk__big_unmap(h, &tab[i]);
			mpk__big_remove(&tab[i]);
		}
	pthread_mutex_unlock(&mpk__meta_lock);
}

int mpk__bigs_relock(struct heap *h)
{
	int rc = 0;

	pthread_mutex_lock(&mpk__meta_lock);
	for (size_t i = 0; i < cap && !rc; i++)
		if (tab[i].state == BIG_LIVE && tab[i].heap == h)
			rc = mpk__heap_lock_pages(h, (void *)tab[i].region, tab[i].reglen);
	pthread_mutex_unlock(&mpk__meta_lock);
	return rc;
}
