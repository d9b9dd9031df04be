/* SPDX-License-Identifier: MIT */
/*
 * Windows: the reserved address space domain memory is carved from (see
 * window.h).  Carving is a bump pointer plus free lists of whole units
 * (pages + trailing guard), exact-size for small units, first fit with
 * splitting for big ones; units are never merged, which keeps every
 * operation O(1) for the sizes programs repeat (heap chunks, pages).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"
#include "os.h"
#include "window.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define VA_BITS 47 /* user space without 5-level hints */
#define GRANULE_SHIFT 21
#define WINDOW_NAME "mpkit-window" /* tests look for it */
#define SMALL_UNITS 1024 /* exact-size free lists for units below this many pages */

struct window {
	uintptr_t base, size;
	uintptr_t *table; /* region.c's first level: one word per granule */
};

static struct window win[MPK_WINDOW_MAX];
static unsigned nwin; /* published with release after win[i] is filled */
static uint16_t win_of[1u << (VA_BITS - MPK_WINDOW_SHIFT)]; /* index + 1 */
static uintptr_t lo_all = UINTPTR_MAX, hi_all; /* every window's span */
static uint64_t gen;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t bump, bump_end; /* the newest window's untouched tail */
static size_t mapped; /* bytes mapped in the windows now */

struct vec {
	uintptr_t *v;
	size_t n, cap;
};
static struct vec small[SMALL_UNITS]; /* unit starts, by unit pages */
struct extent {
	uintptr_t start;
	size_t pages;
};
static struct extent *bigf;
static size_t nbig, capbig;

static uintptr_t align_up(uintptr_t x, uintptr_t a)
{
	return (x + a - 1) & ~(a - 1);
}

/* ---- readers (signal-safe) ---- */

int mpk__window_of(uintptr_t a)
{
	if (a - __atomic_load_n(&lo_all, __ATOMIC_ACQUIRE) >=
	    __atomic_load_n(&hi_all, __ATOMIC_ACQUIRE) - __atomic_load_n(&lo_all, __ATOMIC_ACQUIRE))
		return -1;
	unsigned e = __atomic_load_n(&win_of[a >> MPK_WINDOW_SHIFT], __ATOMIC_ACQUIRE);
	return (int)e - 1;
}

bool mpk__in_window(uintptr_t a)
{
	return mpk__window_of(a) >= 0;
}

uintptr_t *mpk__window_table(int i, uintptr_t *base, uintptr_t *size)
{
	if (i < 0 || (unsigned)i >= __atomic_load_n(&nwin, __ATOMIC_ACQUIRE))
		return NULL;
	*base = win[i].base;
	*size = win[i].size;
	return win[i].table;
}

uint64_t mpk__ranges_gen(void)
{
	return __atomic_load_n(&gen, __ATOMIC_ACQUIRE);
}

void mpk__ranges_changed(void)
{
	__atomic_add_fetch(&gen, 1, __ATOMIC_RELEASE);
}

int mpk__adopted_each(int (*fn)(const struct mpk_range *r, void *arg), void *arg);

int mpk__ranges_each(int (*fn)(const struct mpk_range *r, void *arg), void *arg)
{
	unsigned n = __atomic_load_n(&nwin, __ATOMIC_ACQUIRE);

	for (unsigned i = 0; i < n; i++) {
		struct mpk_range r = { win[i].base, win[i].base + win[i].size, MPK_RANGE_WINDOW };
		int rc = fn(&r, arg);
		if (rc)
			return rc;
	}
	return mpk__adopted_each(fn, arg);
}

/* ---- free units (under lock) ---- */

static void push_free(uintptr_t start, size_t pages)
{
	if (pages < 2)
		return; /* a lone guard page: stays reserved, unused */
	if (pages < SMALL_UNITS) {
		struct vec *v = &small[pages];
		if (v->n == v->cap) {
			size_t cap = v->cap ? 2 * v->cap : 16;
			uintptr_t *n = mpk__irealloc(v->v, cap * sizeof(*n));
			if (!n)
				return; /* lost for reuse, still reserved */
			v->v = n;
			v->cap = cap;
		}
		v->v[v->n++] = start;
		return;
	}
	if (nbig == capbig) {
		size_t cap = capbig ? 2 * capbig : 16;
		struct extent *n = mpk__irealloc(bigf, cap * sizeof(*n));
		if (!n)
			return;
		bigf = n;
		capbig = cap;
	}
	bigf[nbig++] = (struct extent){ start, pages };
}

/* A free unit for len bytes at align: exact size from the small lists (the
 * last few freed only, for an alignment), else the first big one that fits,
 * split.  0 if none. */
static uintptr_t take_free(size_t len, size_t align, size_t page)
{
	size_t pages = len / page + 1;

	if (pages < SMALL_UNITS) {
		struct vec *v = &small[pages];
		for (size_t i = v->n, tries = 0; i-- > 0 && tries < 8; tries++)
			if (!(v->v[i] & (align - 1))) {
				uintptr_t s = v->v[i];
				v->v[i] = v->v[--v->n];
				return s;
			}
	}
	for (size_t i = 0; i < nbig; i++) {
		uintptr_t s = align_up(bigf[i].start, align), end = bigf[i].start + bigf[i].pages * page;
		if (s + len + page > end)
			continue;
		struct extent e = bigf[i];
		bigf[i] = bigf[--nbig];
		push_free(e.start, (s - e.start) / page);
		push_free(s + len + page, (end - s - len - page) / page);
		return s;
	}
	return 0;
}

/* ---- new windows (under lock) ---- */

static uintptr_t try_reserve(uintptr_t hint, size_t size)
{
	void *p = mpk_os_map_at((void *)hint, size, PROT_NONE,
				MAP_NORESERVE | (hint ? MAP_FIXED_NOREPLACE : 0));
	if (!p)
		return 0;
	/* Kernels before 4.17 take the flag as a hint only. */
	if (hint && (uintptr_t)p != hint) {
		mpk_os_unmap(p, size);
		return 0;
	}
	return (uintptr_t)p;
}

/* Reserve size bytes aligned to the window size: next to the others if
 * there is room, else anywhere (reserve more, trim both ends). */
static uintptr_t reserve(size_t size)
{
	uintptr_t b = 0;

	if (nwin) {
		if (lo_all > size)
			b = try_reserve(lo_all - size, size);
		if (!b && hi_all + size <= ((uintptr_t)1 << VA_BITS))
			b = try_reserve(hi_all, size);
		if (b)
			return b;
	}
	uintptr_t p = try_reserve(0, size + MPK_WINDOW_SIZE);
	if (!p)
		return 0;
	b = align_up(p, MPK_WINDOW_SIZE);
	if (b > p)
		mpk_os_unmap((void *)p, b - p);
	if (p + MPK_WINDOW_SIZE > b)
		mpk_os_unmap((void *)(b + size), p + MPK_WINDOW_SIZE - b);
	if (b + size > ((uintptr_t)1 << VA_BITS)) {
		mpk_os_unmap((void *)b, size);
		return 0;
	}
	return b;
}

static int new_window(size_t need, size_t page)
{
	size_t size = align_up(need + 2 * page, MPK_WINDOW_SIZE);
	unsigned i = nwin;

	if (i == MPK_WINDOW_MAX || need > ((uintptr_t)1 << (VA_BITS - 2)))
		return -1;
	uintptr_t *table = mpk__ialloc_array(size >> GRANULE_SHIFT, sizeof(*table));
	if (!table)
		return -1;
	uintptr_t b = reserve(size);
	if (!b) {
		mpk__ifree(table);
		return -1;
	}
	/* After mpk_lockdown(): a filter of its own before it holds anything. */
	if (mpk__cover(b, b + size)) {
		mpk_os_unmap((void *)b, size);
		mpk__ifree(table);
		return -1;
	}
	win[i] = (struct window){ b, size, table };
	mpk_os_name_region((void *)b, size, WINDOW_NAME);
	__atomic_store_n(&nwin, i + 1, __ATOMIC_RELEASE);
	for (uintptr_t s = b >> MPK_WINDOW_SHIFT; s < (b + size) >> MPK_WINDOW_SHIFT; s++)
		__atomic_store_n(&win_of[s], (uint16_t)(i + 1), __ATOMIC_RELEASE);
	/* Widen the span: hi first, so a reader never sees lo > hi. */
	if (b + size > hi_all)
		__atomic_store_n(&hi_all, b + size, __ATOMIC_RELEASE);
	if (b < lo_all)
		__atomic_store_n(&lo_all, b, __ATOMIC_RELEASE);
	mpk__ranges_changed();
	/* The old tail becomes a free unit; the new window starts with a guard. */
	if (bump_end > bump)
		push_free(bump, (bump_end - bump) / page);
	bump = b + page;
	bump_end = b + size;
	return 0;
}

void mpk__window_lock(void)
{
	pthread_mutex_lock(&lock);
}

void mpk__window_unlock(void)
{
	pthread_mutex_unlock(&lock);
}

void mpk__window_child(void)
{
	pthread_mutex_init(&lock, NULL);
}

/* ---- carving ---- */

void *mpk__window_carve(size_t len, size_t align)
{
	size_t page = mpk_os_page_size();
	uintptr_t s;

	if (align < page)
		align = page;
	if (!len || (len & (page - 1)) || (align & (align - 1)) ||
	    len > ((uintptr_t)1 << (VA_BITS - 2)) || align > MPK_WINDOW_SIZE) {
		errno = len && !(len & (page - 1)) && !(align & (align - 1)) ? ENOMEM : EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&lock);
	s = take_free(len, align, page);
	if (!s) {
		s = align_up(bump, align);
		if (!bump || s + len + page > bump_end) {
			if (new_window(len + align, page)) {
				pthread_mutex_unlock(&lock);
				errno = ENOMEM;
				return NULL;
			}
			s = align_up(bump, align);
		}
		push_free(bump, (s - bump) / page); /* the alignment pad */
		bump = s + len + page;
	}
	pthread_mutex_unlock(&lock);
	return (void *)s;
}

static size_t test_cap; /* 0: none */

void mpk__window_test_cap(size_t bytes)
{
	pthread_mutex_lock(&lock);
	test_cap = bytes;
	pthread_mutex_unlock(&lock);
}

size_t mpk__window_mapped(void)
{
	pthread_mutex_lock(&lock);
	size_t m = mapped;
	pthread_mutex_unlock(&lock);
	return m;
}

void *mpk__window_map(size_t len, size_t align, int prot)
{
	pthread_mutex_lock(&lock);
	bool over = test_cap && mapped + len > test_cap;
	pthread_mutex_unlock(&lock);
	if (over) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = mpk__window_carve(len, align);

	if (!p)
		return NULL;
	/* A VMA of its own: the reservation around it is PROT_NONE and
	 * VM_NORESERVE, which this mapping is not, so they never merge. */
	if (!mpk_os_map_at(p, len, prot, MAP_FIXED)) {
		int err = errno;
		pthread_mutex_lock(&lock);
		push_free((uintptr_t)p, len / mpk_os_page_size() + 1); /* still reserved */
		pthread_mutex_unlock(&lock);
		errno = err == EEXIST ? ENOMEM : err;
		return NULL;
	}
	pthread_mutex_lock(&lock);
	mapped += len;
	pthread_mutex_unlock(&lock);
	return p;
}

void mpk__window_unmap(void *p, size_t len)
{
	size_t page = mpk_os_page_size();

	/* Reserved again (it merges back into the reservation): drop the
	 * pages but never leave a hole another mmap() could land in. */
	if (!mpk_os_map_at(p, len, PROT_NONE, MAP_FIXED | MAP_NORESERVE)) {
		mpk_os_madvise(p, len, MADV_DONTNEED);
		mpk_os_mprotect(p, len, PROT_NONE);
	}
	mpk_os_name_region(p, len, WINDOW_NAME); /* merges back into the reservation */
	pthread_mutex_lock(&lock);
	mapped -= len;
	push_free((uintptr_t)p, len / page + 1);
	pthread_mutex_unlock(&lock);
}

void mpk__window_uncarve(void *p, size_t len)
{
	pthread_mutex_lock(&lock);
	push_free((uintptr_t)p, len / mpk_os_page_size() + 1);
	pthread_mutex_unlock(&lock);
}

int mpk__window_move(void *old, size_t old_len, void *to, size_t new_len)
{
	pthread_mutex_lock(&lock);
	bool over = test_cap && new_len > old_len && mapped + new_len - old_len > test_cap;
	pthread_mutex_unlock(&lock);
	if (over) {
		errno = ENOMEM;
		return -1;
	}
	/* Onto the carved reservation (it replaces it); the pages, their key
	 * and protection move with the mapping.  The old range is a hole now:
	 * reserved again at once, before anything else can land there. */
	if (!mpk_os_remap_fixed(old, old_len, new_len, to))
		return -1;
	pthread_mutex_lock(&lock);
	mapped += new_len;
	pthread_mutex_unlock(&lock);
	mpk__window_unmap(old, old_len);
	return 0;
}

/* ---- memory apart from the windows that a lockdown filter covers ---- */

/* A filter cannot be loosened: once it covers a range, the range stays
 * mpkit's.  Given back after lockdown it is reserved again, listed here
 * (under lock) for mpk__covered_map() to reuse; a range the list has no
 * room for stays reserved all the same. */
#define KEPT_MAX 256
#define KEPT_NAME "mpkit-kept"
static struct {
	uintptr_t lo, hi;
} kept[KEPT_MAX];
static size_t nkept, kept_bytes;

static void kept_push(uintptr_t lo, uintptr_t hi)
{
	kept_bytes += hi - lo;
	for (size_t i = 0; i < nkept; i++)
		if (kept[i].hi == lo || kept[i].lo == hi) {
			kept[i].lo = kept[i].lo < lo ? kept[i].lo : lo;
			kept[i].hi = kept[i].hi > hi ? kept[i].hi : hi;
			return;
		}
	if (nkept < KEPT_MAX) {
		kept[nkept].lo = lo;
		kept[nkept].hi = hi;
		nkept++;
	}
}

size_t mpk__kept_each(void (*fn)(uintptr_t lo, uintptr_t hi, void *arg), void *arg)
{
	pthread_mutex_lock(&lock);
	size_t n = nkept;
	for (size_t i = 0; fn && i < n; i++)
		fn(kept[i].lo, kept[i].hi, arg);
	pthread_mutex_unlock(&lock);
	return n;
}

bool mpk__range_kept(const void *addr, size_t len)
{
	uintptr_t lo = (uintptr_t)addr, hi = lo + len;
	bool hit = false;

	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < nkept && !hit; i++)
		hit = kept[i].lo < hi && lo < kept[i].hi;
	pthread_mutex_unlock(&lock);
	return hit;
}

size_t mpk__window_kept(void)
{
	pthread_mutex_lock(&lock);
	size_t n = kept_bytes;
	pthread_mutex_unlock(&lock);
	return n;
}

/* The smallest kept range of at least len bytes (the metadata area's
 * pieces are all one size: a small file leaves them whole), or nkept. */
static size_t kept_fit(size_t len)
{
	size_t best = nkept;

	for (size_t i = 0; i < nkept; i++)
		if (kept[i].hi - kept[i].lo >= len &&
		    (best == nkept || kept[i].hi - kept[i].lo < kept[best].hi - kept[best].lo))
			best = i;
	return best;
}

void *mpk__covered_map(size_t len, int prot, int flags, int fd, off_t off)
{
	void *p;
	size_t i;

	pthread_mutex_lock(&lock);
	if (__atomic_load_n(&mpk_os_locked, __ATOMIC_ACQUIRE) && (i = kept_fit(len)) < nkept) {
		/* Covered already: no filter more.  On failure the
		 * reservation stays, as the windows' does. */
		p = mpk_os_map_fd((void *)kept[i].lo, len, prot, flags | MAP_FIXED, fd, off);
		if (p) {
			kept_bytes -= len;
			kept[i].lo += len;
			if (kept[i].lo == kept[i].hi)
				kept[i] = kept[--nkept];
		}
		pthread_mutex_unlock(&lock);
		return p;
	}
	pthread_mutex_unlock(&lock);
	p = mpk_os_map_fd(NULL, len, prot, flags, fd, off);
	/* After lockdown: a filter of its own before it holds anything. */
	if (p && mpk__cover((uintptr_t)p, (uintptr_t)p + len)) {
		int err = errno;
		mpk_os_unmap(p, len);
		errno = err;
		return NULL;
	}
	return p;
}

void mpk__covered_unmap(void *p, size_t len)
{
	pthread_mutex_lock(&lock);
	if (!__atomic_load_n(&mpk_os_locked, __ATOMIC_ACQUIRE)) {
		pthread_mutex_unlock(&lock);
		mpk_os_unmap(p, len);
		return;
	}
	/* Pages (and a file) dropped, address space kept. */
	if (!mpk_os_map_at(p, len, PROT_NONE, MAP_FIXED | MAP_NORESERVE)) {
		mpk_os_madvise(p, len, MADV_DONTNEED);
		mpk_os_mprotect(p, len, PROT_NONE);
	}
	mpk_os_name_region(p, len, KEPT_NAME);
	kept_push((uintptr_t)p, (uintptr_t)p + len);
	pthread_mutex_unlock(&lock);
}
