/* SPDX-License-Identifier: MIT */
/*
 * The region table: which mappings belong to which domain, and address ->
 * region in O(1).  Inside a window (window.h) a lookup is arithmetic: the
 * window's first-level table has one word per 2 MiB granule, either the one
 * region in that granule or (low bit set) a leaf with one word per page.
 * Adopted ranges, the only domain memory outside the windows, are a short
 * list.  Writers hold mpk_g.lock; the fault handler reads without a lock,
 * which is why region slots live in chunks that are never freed, leaves are
 * never freed, a slot's start is published last and cleared first, and
 * every field a reader sees is read atomically.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"
#include "os.h"
#include "window.h"

#define CHUNK_SLOTS 128
#define GRANULE_SHIFT 21
#define GRANULE ((uintptr_t)1 << GRANULE_SHIFT)

struct chunk {
	struct mpk_region slot[CHUNK_SLOTS];
	struct chunk *next;
};

static struct chunk *chunks;
static struct mpk_region *free_slots; /* through next, under the lock */
static unsigned page_shift;           /* set before the first leaf exists */

static struct mpk_region *free_slot(void)
{
	struct mpk_region *r = free_slots;

	if (r) {
		free_slots = r->next;
		return r;
	}
	struct chunk *c = mpk__ialloc(sizeof(*c));
	if (!c)
		return NULL;
	c->next = chunks;
	chunks = c;
	for (int i = CHUNK_SLOTS - 1; i > 0; i--) {
		c->slot[i].next = free_slots;
		free_slots = &c->slot[i];
	}
	return &c->slot[0];
}

static void slot_put(struct mpk_region *r)
{
	r->next = free_slots;
	free_slots = r;
}

/* ---- the window tables ---- */

static size_t leaf_words(void)
{
	return GRANULE >> page_shift;
}

/* Store r in each page word of leaf that [s, s+len) covers in granule gb. */
static void leaf_fill(uintptr_t *leaf, uintptr_t gb, uintptr_t s, size_t len,
		      struct mpk_region *r, struct mpk_region *only)
{
	uintptr_t lo = s > gb ? s : gb, hi = s + len < gb + GRANULE ? s + len : gb + GRANULE;

	for (uintptr_t a = lo; a < hi; a += (uintptr_t)1 << page_shift) {
		uintptr_t *w = &leaf[(a - gb) >> page_shift];
		if (!only || __atomic_load_n(w, __ATOMIC_RELAXED) == (uintptr_t)only)
			__atomic_store_n(w, (uintptr_t)r, __ATOMIC_RELEASE);
	}
}

static void table_del(uintptr_t *t, uintptr_t base, struct mpk_region *r, uintptr_t s, size_t len)
{
	for (uintptr_t g = (s - base) >> GRANULE_SHIFT; g <= (s + len - 1 - base) >> GRANULE_SHIFT; g++) {
		uintptr_t e = __atomic_load_n(&t[g], __ATOMIC_RELAXED);
		if (e == (uintptr_t)r)
			__atomic_store_n(&t[g], 0, __ATOMIC_RELEASE);
		else if (e & 1)
			leaf_fill((uintptr_t *)(e - 1), base + (g << GRANULE_SHIFT), s, len, NULL, r);
	}
}

/* A granule alone with its region holds it directly; a second region
 * there turns the word into a leaf (first filled with the one already in,
 * then published, so readers always see both or the old word). */
static int table_put(uintptr_t *t, uintptr_t base, struct mpk_region *r, uintptr_t s, size_t len)
{
	for (uintptr_t g = (s - base) >> GRANULE_SHIFT; g <= (s + len - 1 - base) >> GRANULE_SHIFT; g++) {
		uintptr_t gb = base + (g << GRANULE_SHIFT);
		uintptr_t e = __atomic_load_n(&t[g], __ATOMIC_RELAXED);
		if (!e) {
			__atomic_store_n(&t[g], (uintptr_t)r, __ATOMIC_RELEASE);
			continue;
		}
		if (e == (uintptr_t)r)
			continue; /* r grows within a granule it holds alone */
		if (!(e & 1)) {
			struct mpk_region *o = (struct mpk_region *)e;
			uintptr_t *leaf = mpk__ialloc_array(leaf_words(), sizeof(*leaf));
			if (!leaf) {
				if (g > (s - base) >> GRANULE_SHIFT)
					table_del(t, base, r, s, gb - s);
				errno = ENOMEM;
				return -1;
			}
			leaf_fill(leaf, gb, o->start, o->len, o, NULL);
			__atomic_store_n(&t[g], (uintptr_t)leaf | 1, __ATOMIC_RELEASE);
			e = (uintptr_t)leaf | 1;
		}
		leaf_fill((uintptr_t *)(e - 1), gb, s, len, r, NULL);
	}
	return 0;
}

/* ---- adopted ranges: a list readers scan without a lock ---- */

struct aset {
	size_t cap;
	struct mpk_region *r[];
};
static struct aset *aset; /* grown by copying; old sets are kept for readers */
static size_t an;         /* published after the entry (and a new set) */

static int adopted_add(struct mpk_region *r)
{
	if (!aset || an == aset->cap) {
		size_t cap = aset ? 2 * aset->cap : 16;
		struct aset *n = mpk__ialloc(sizeof(*n) + cap * sizeof(n->r[0]));
		if (!n) {
			errno = ENOMEM;
			return -1;
		}
		n->cap = cap;
		for (size_t i = 0; i < an; i++)
			n->r[i] = aset->r[i];
		__atomic_store_n(&aset, n, __ATOMIC_RELEASE); /* the old one leaks: a reader may hold it */
	}
	__atomic_store_n(&aset->r[an], r, __ATOMIC_RELEASE);
	__atomic_store_n(&an, an + 1, __ATOMIC_RELEASE);
	return 0;
}

static void adopted_del(struct mpk_region *r)
{
	for (size_t i = 0; i < an; i++)
		if (aset->r[i] == r) {
			/* The last entry moves into i before the count drops: a
			 * reader sees it at one place or both, never at none. */
			__atomic_store_n(&aset->r[i], aset->r[an - 1], __ATOMIC_RELEASE);
			__atomic_store_n(&an, an - 1, __ATOMIC_RELEASE);
			return;
		}
}

/* r if addr is inside it now. */
static struct mpk_region *hit(struct mpk_region *r, uintptr_t a)
{
	if (!r)
		return NULL;
	uintptr_t s = __atomic_load_n(&r->start, __ATOMIC_ACQUIRE);
	return s && a - s < __atomic_load_n(&r->len, __ATOMIC_RELAXED) ? r : NULL;
}

int mpk__adopted_each(int (*fn)(const struct mpk_range *r, void *arg), void *arg);
int mpk__adopted_each(int (*fn)(const struct mpk_range *r, void *arg), void *arg)
{
	size_t n = __atomic_load_n(&an, __ATOMIC_ACQUIRE);
	struct aset *set = __atomic_load_n(&aset, __ATOMIC_ACQUIRE);

	for (size_t i = 0; i < n; i++) {
		struct mpk_region *r = __atomic_load_n(&set->r[i], __ATOMIC_ACQUIRE);
		uintptr_t s = __atomic_load_n(&r->start, __ATOMIC_ACQUIRE);
		struct mpk_range g = { s, s + __atomic_load_n(&r->len, __ATOMIC_RELAXED),
				       MPK_RANGE_ADOPTED };
		int rc;
		if (s && (rc = fn(&g, arg)))
			return rc;
	}
	return 0;
}

/* ---- regions ---- */

struct mpk_region *mpk__region_add(struct mpk_domain *d, void *start, size_t len)
{
	struct mpk_region *r = free_slot();
	uintptr_t s = (uintptr_t)start, base, size;
	int w = mpk__window_of(s);
	int rc;

	if (!r) {
		errno = ENOMEM;
		return NULL;
	}
	if (!page_shift)
		page_shift = (unsigned)__builtin_ctzl(mpk_os_page_size());
	__atomic_store_n(&r->len, len, __ATOMIC_RELAXED);
	r->cap = len;
	__atomic_store_n(&r->domain, d, __ATOMIC_RELAXED);
	r->owned = false;
	r->sealed = false;
	r->exec = false;
	__atomic_store_n(&r->start, s, __ATOMIC_RELEASE);
	if (w >= 0) {
		uintptr_t *t = mpk__window_table(w, &base, &size);
		rc = s + len <= base + size ? table_put(t, base, r, s, len) : (errno = EINVAL, -1);
	} else {
		rc = adopted_add(r);
		if (!rc)
			mpk__ranges_changed();
	}
	if (rc) {
		__atomic_store_n(&r->start, 0, __ATOMIC_RELEASE);
		slot_put(r);
		return NULL;
	}
	r->next = d->regions;
	r->pprev = &d->regions;
	if (r->next)
		r->next->pprev = &r->next;
	d->regions = r;
	mpk__registry_add(r);
	return r;
}

void mpk__region_del(struct mpk_region *r)
{
	uintptr_t s = r->start, base, size;
	int w = mpk__window_of(s);

	*r->pprev = r->next;
	if (r->next)
		r->next->pprev = r->pprev;
	mpk__registry_del(r);
	__atomic_store_n(&r->start, 0, __ATOMIC_RELEASE);
	if (w >= 0) {
		uintptr_t *t = mpk__window_table(w, &base, &size);
		table_del(t, base, r, s, r->len);
	} else {
		adopted_del(r);
		mpk__ranges_changed();
	}
	slot_put(r);
}

int mpk__region_resize(struct mpk_region *r, size_t len)
{
	uintptr_t s = r->start, base, size;
	int w = mpk__window_of(s);

	if (w < 0 || !len || len > r->cap) {
		errno = EINVAL; /* only owned window memory grows */
		return -1;
	}
	uintptr_t *t = mpk__window_table(w, &base, &size);
	if (len > r->len) {
		if (table_put(t, base, r, s + r->len, len - r->len))
			return -1;
		/* After the table: a lookup finds r there once len says so. */
		__atomic_store_n(&r->len, len, __ATOMIC_RELEASE);
		return 0;
	}
	/* Smaller: len first, so lookups stop there, then the table. */
	uintptr_t lo = s + len, hi = s + r->len;
	__atomic_store_n(&r->len, len, __ATOMIC_RELEASE);
	for (uintptr_t g = (lo - base) >> GRANULE_SHIFT; g <= (hi - 1 - base) >> GRANULE_SHIFT; g++) {
		uintptr_t gb = base + (g << GRANULE_SHIFT);
		uintptr_t e = __atomic_load_n(&t[g], __ATOMIC_RELAXED);
		if (e == (uintptr_t)r && gb >= lo)
			__atomic_store_n(&t[g], 0, __ATOMIC_RELEASE); /* none of r left there */
		else if (e & 1)
			leaf_fill((uintptr_t *)(e - 1), gb, lo, hi - lo, NULL, (struct mpk_region *)r);
	}
	return 0;
}

void mpk__region_release(void *start, size_t len)
{
	if (mpk__in_window((uintptr_t)start))
		mpk__window_unmap(start, len);
	else
		mpk__covered_unmap(start, len); /* kept reserved after lockdown */
}

struct mpk_region *mpk__region_lookup(const void *addr)
{
	uintptr_t a = (uintptr_t)addr, base, size;
	int w = mpk__window_of(a);

	if (w >= 0) {
		uintptr_t *t = mpk__window_table(w, &base, &size);
		if (!t || a - base >= size)
			return NULL;
		uintptr_t e = __atomic_load_n(&t[(a - base) >> GRANULE_SHIFT], __ATOMIC_ACQUIRE);
		if (e & 1)
			e = __atomic_load_n(&((uintptr_t *)(e - 1))[(a & (GRANULE - 1)) >>
					__atomic_load_n(&page_shift, __ATOMIC_RELAXED)], __ATOMIC_ACQUIRE);
		return hit((struct mpk_region *)e, a);
	}
	size_t n = __atomic_load_n(&an, __ATOMIC_ACQUIRE);
	if (!n)
		return NULL;
	struct aset *set = __atomic_load_n(&aset, __ATOMIC_ACQUIRE);
	for (size_t i = 0; i < n; i++) {
		struct mpk_region *r = hit(__atomic_load_n(&set->r[i], __ATOMIC_ACQUIRE), a);
		if (r)
			return r;
	}
	return NULL;
}

static int overlaps(const struct mpk_range *g, void *arg)
{
	const uintptr_t *q = arg;
	return g->lo < q[1] && q[0] < g->hi;
}

bool mpk__range_overlaps(const void *addr, size_t len)
{
	uintptr_t q[2] = { (uintptr_t)addr, (uintptr_t)addr + len };
	return mpk__ranges_each(overlaps, q) != 0;
}

void mpk__regions_each(void (*fn)(struct mpk_region *r, void *arg), void *arg)
{
	for (struct chunk *c = chunks; c; c = c->next)
		for (int i = 0; i < CHUNK_SLOTS; i++)
			if (c->slot[i].start)
				fn(&c->slot[i], arg);
}

struct spans {
	bool (*fn)(const struct mpk_region_span *s, void *arg);
	void *arg;
};

static void span_of(struct mpk_region *r, void *arg)
{
	struct spans *sp = arg;
	struct mpk_region_span s = { r->start, r->len, !r->owned && r->domain->key >= 0 };

	if (!sp->fn(&s, sp->arg) || !s.sealable)
		return;
	r->sealed = true;
	if (!r->domain->sealed) {
		r->domain->sealed = true;
		r->domain->holds++;
	}
}

void mpk__region_spans_each(bool (*fn)(const struct mpk_region_span *s, void *arg), void *arg)
{
	struct spans sp = { fn, arg };
	mpk__regions_each(span_of, &sp);
}

void mpk__domain_unmap_all(struct mpk_domain *d)
{
	while (d->regions) {
		struct mpk_region *r = d->regions;
		void *start = (void *)r->start;
		size_t len = r->cap;
		mpk__region_del(r);
		mpk__region_release(start, len);
	}
}

struct mpk_region *mpk__region_find(struct mpk_domain *d, const void *start)
{
	struct mpk_region *r = mpk__region_lookup(start);
	return r && r->domain == d && r->start == (uintptr_t)start ? r : NULL;
}

int mpk__region_register(struct mpk_domain *d, void *p, size_t len, bool add)
{
	struct mpk_region *r;
	int rc = -1;

	pthread_mutex_lock(&mpk_g.lock);
	if (!mpk__domain_ok(d)) {
		errno = EINVAL;
	} else if (add) {
		mpk__lock(&d->lock);
		rc = mpk__region_add(d, p, len) ? 0 : -1;
		mpk__unlock(&d->lock);
	} else {
		r = mpk__region_find(d, p);
		if (r) {
			mpk__lock(&d->lock);
			mpk__region_del(r);
			mpk__unlock(&d->lock);
			rc = 0;
		} else {
			errno = EINVAL;
		}
	}
	pthread_mutex_unlock(&mpk_g.lock);
	return rc;
}

MPK_EXPORT mpk_domain *mpk_domain_of(const void *addr)
{
	if (mpk__ensure_init())
		return NULL;
	/* No lock: the region's start is read again after its domain, so a
	 * slot reused meanwhile is not taken for the old region. */
	struct mpk_region *r = mpk__region_lookup(addr);
	if (r) {
		uintptr_t s = __atomic_load_n(&r->start, __ATOMIC_ACQUIRE);
		mpk_domain *d = __atomic_load_n(&r->domain, __ATOMIC_ACQUIRE);
		if (__atomic_load_n(&r->start, __ATOMIC_ACQUIRE) == s && hit(r, (uintptr_t)addr))
			return d;
	}
	errno = ENOENT;
	return NULL;
}
