/* SPDX-License-Identifier: MIT */
/*
 * Where heap metadata lives: one area for every heap and vault in the
 * process, in pages apart from any block, so a linear overflow of a block
 * never reaches it.  Closed (the default on hw) it is one domain,
 * "heap-meta": one hardware key however many heaps, opened for the calling
 * thread only while an allocator call runs.  On soft, closing costs two
 * mprotect() per call, so there the default is open: plain memory
 * (MPKIT_HEAP_META=closed|open|auto chooses; see README).
 *
 * The area hands out zeroed power-of-two runs of pages with a free list per
 * size; freed runs go back to the kernel (MADV_DONTNEED).  It lives while a
 * heap does and is torn down, key and all, with the last one (open, after
 * lockdown, its pieces stay reserved for the next area: core.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>

#include "../shared/env.h"
#include "heap.h"

#define META_REGION ((size_t)4 << 20)
#define META_ORDERS 11 /* 1 to 1024 pages */
_Static_assert(META_ORDERS == sizeof(((struct meta_state *)0)->free) / sizeof(void *), "orders");

enum { MODE_AUTO = MPK_META_AUTO, MODE_OPEN = MPK_META_OPEN, MODE_CLOSED = MPK_META_CLOSED };

pthread_mutex_t mpk__meta_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t mpk__heaps_lock = PTHREAD_MUTEX_INITIALIZER;

/* The seal's page (seal.c) holds the area's place and ranges; the state
 * that changes with every run (free lists, bump, the registry, the key)
 * is the area's first page. */
#define seal (mpk__seal_pg.s)

static uint64_t random_key(void)
{
	uint64_t k;
	struct timespec ts;

	if (getrandom(&k, sizeof(k), GRND_NONBLOCK) == (ssize_t)sizeof(k))
		return k;
	/* No entropy yet (early boot): the checksums still catch overflows,
	 * they are just guessable. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uintptr_t)&k;
}

static int register_ranges(void);
static void *new_region(mpk_domain *d, size_t len);
static void drop_region(mpk_domain *d, void *p, size_t len);

/* Write the seal's page (the lock held). */
static int seal_open(void)
{
	return mpk__seal_write(&mpk__seal_pg, sizeof(mpk__seal_pg), true);
}

static void seal_close(void)
{
	/* Failing, it stays writable: unsealed, not broken (a later
	 * seal_open() makes it writable anyway). */
	(void)!mpk__seal_write(&mpk__seal_pg, sizeof(mpk__seal_pg), false);
}

/* The first heap: the mode, and the heap-meta domain if sealed (the
 * area comes with the first run, meta_make()).  Seal's page open. */
static int meta_mode(void)
{
	int mode = mpk__env_parse(MPK_ENV_HEAP_META, 0);

	if (mode < 0) {
		/* Changed since mpk_init() checked it. */
		char msg[200];
		mpk__env_describe(MPK_ENV_HEAP_META, msg, sizeof(msg));
		mpk__env_complain(msg);
		errno = EINVAL;
		return -1;
	}
	if (mode == MODE_AUTO)
		mode = mpk_backend() == MPK_BACKEND_HW ? MODE_CLOSED : MODE_OPEN;
	if (mode == MODE_CLOSED) {
		mpk_domain *d = mpk_domain_create("heap-meta", MPK_NONE, 0);
		if (!d)
			return -1;
		/* Nobody but us destroys it (mpk_domain_of() finds it). */
		mpk__domain_hold(d);
		__atomic_store_n(&mpk__meta_dom, d, __ATOMIC_RELEASE);
	}
	return 0;
}

int mpk__meta_get(void)
{
	if (seal_open())
		return -1;
	int rc = seal.nheaps ? 0 : meta_mode();
	if (!rc)
		seal.nheaps++;
	seal_close();
	return rc;
}

/* The area's first region, the state at its start, and the seal over
 * them (sealed mode): with the first run, the metadata open and the lock
 * held.  Failing, the heap that asked goes (mpk__meta_put() then hands the
 * domain to its caller to destroy). */
static int meta_make(void)
{
	mpk_domain *d = mpk__meta_dom;
	size_t len = META_REGION;

	if (register_ranges())
		return -1;
	struct meta_state *st = new_region(d, len);
	if (!st)
		return -1;
	st->bump = (uintptr_t)st + mpk__page();
	st->end = (uintptr_t)st + len;
	st->key = random_key();
	if (seal_open())
		goto fail;
	seal.range[0].lo = (uintptr_t)st;
	seal.range[0].hi = (uintptr_t)st + len;
	__atomic_store_n(&seal.nranges, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&seal.st, st, __ATOMIC_RELEASE);
	if (d && mpk__seal_all(true)) {
		__atomic_store_n(&seal.st, NULL, __ATOMIC_RELEASE);
		__atomic_store_n(&seal.nranges, 0, __ATOMIC_RELEASE);
		goto fail;
	}
	seal_close();
	return 0;
fail: {
		int err = errno;
		drop_region(d, st, len);
		errno = err;
		return -1;
	}
}

mpk_domain *mpk__meta_put(bool *last)
{
	mpk_domain *d = mpk__meta_dom;
	unsigned n = seal.nranges;

	*last = false;
	if (seal_open())
		return NULL; /* it stays: a leak, never a fault */
	if (--seal.nheaps) {
		seal_close();
		return NULL;
	}
	*last = true;
	/* The last heap is gone: nothing in the area is in use. */
	(void)!mpk__seal_all(false); /* failing, the page is writable: open */
	__atomic_store_n(&seal.nranges, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&seal.st, NULL, __ATOMIC_RELEASE);
	__atomic_store_n(&mpk__meta_dom, NULL, __ATOMIC_RELEASE);
	if (!d) /* after lockdown the filter covers them: kept for the next area */
		for (unsigned i = 0; i < n; i++)
			mpk__covered_unmap((void *)seal.range[i].lo, seal.range[i].hi - seal.range[i].lo);
	memset(seal.range, 0, sizeof(seal.range));
	if (d)
		mpk__domain_unhold(d);
	return d; /* the caller destroys it (its regions go), without the lock */
}

static bool in_ranges(const void *p, size_t sz);
static bool in_area(const void *p, size_t sz);

bool mpk__meta_contains(const void *p)
{
	/* Sealed: the ranges and the core's record, as in_area(). */
	if (__atomic_load_n(&mpk__meta_dom, __ATOMIC_ACQUIRE))
		return in_area(p, 1);
	return in_ranges(p, 1);
}

/* Whether [lo, hi) lies whole in one of the area's ranges (whole), or
 * meets one, as the seal page says. */
static bool in_seal(uintptr_t lo, uintptr_t hi, bool whole)
{
	unsigned n = __atomic_load_n(&seal.nranges, __ATOMIC_ACQUIRE);

	for (unsigned i = 0; i < n && i < META_RANGES; i++)
		if (whole ? lo >= seal.range[i].lo && lo < seal.range[i].hi && hi <= seal.range[i].hi
			  : lo < seal.range[i].hi && seal.range[i].lo < hi)
			return true;
	return false;
}

bool mpk__meta_overlaps(const void *p, size_t len)
{
	return in_seal((uintptr_t)p, (uintptr_t)p + len, false);
}

struct heap **mpk__meta_heaps(void)
{
	struct meta_state *st = seal.st;

	/* No area, no heap: the seal's empty list (read-only when sealed). */
	return st ? &st->heaps : &seal.none;
}

uint64_t mpk__meta_key(void)
{
	return seal.st->key;
}

static unsigned order_of(size_t len)
{
	size_t pages = (len + mpk__page() - 1) / mpk__page();
	unsigned o = 0;

	while (((size_t)1 << o) < pages)
		o++;
	return o;
}

static void push(void *p, unsigned order)
{
	struct meta_state *st = seal.st;

	*(void **)p = st->free[order];
	st->free[order] = p;
}

/* The area's ranges, for the lockdown filter (core.h): registered with
 * the core before the first one exists (tests call it too).  Read from
 * the seal's page, which every thread may read. */
void mpk__meta_ranges_each(void (*fn)(uintptr_t lo, uintptr_t hi, void *arg), void *arg)
{
	unsigned n = __atomic_load_n(&seal.nranges, __ATOMIC_ACQUIRE);

	for (unsigned i = 0; i < n; i++)
		fn(seal.range[i].lo, seal.range[i].hi, arg);
}

static void meta_lock(void)
{
	pthread_mutex_lock(&mpk__meta_lock);
}

static void meta_unlock(void)
{
	pthread_mutex_unlock(&mpk__meta_lock);
}

static int register_ranges(void)
{
	static const struct mpk_layer_ranges r = { mpk__meta_ranges_each, meta_lock, meta_unlock };
	static bool done;

	if (done) /* under mpk__meta_lock */
		return 0;
	if (mpk__layer_ranges_register(&r))
		return -1;
	done = true;
	return 0;
}

/* A region for the area: the sealed domain's, or mapped apart (open). */
static void *new_region(mpk_domain *d, size_t len)
{
	void *p;

	if (d)
		return mpk__alloc_owned(d, len);
	/* Outside the windows: after lockdown, what an area before left,
	 * or a filter of its own. */
	p = mpk__covered_map(len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	mpk_os_name_region(p, len, "heap-meta");
	return p;
}

static void drop_region(mpk_domain *d, void *p, size_t len)
{
	if (d)
		(void)!mpk__free_owned(d, p);
	else
		mpk__covered_unmap(p, len);
}

/* A new region for the area; what is left of the old one is kept. */
static int grow(size_t len)
{
	struct meta_state *st = seal.st;
	size_t page = mpk__page();
	unsigned n = seal.nranges;
	void *p;

	if (n == META_RANGES) {
		errno = ENOMEM;
		return -1;
	}
	if (len < META_REGION)
		len = META_REGION;
	if (!(p = new_region(mpk__meta_dom, len)))
		return -1;
	if (seal_open()) {
		int err = errno;
		drop_region(mpk__meta_dom, p, len);
		errno = err;
		return -1;
	}
	seal.range[n].lo = (uintptr_t)p;
	seal.range[n].hi = (uintptr_t)p + len;
	__atomic_store_n(&seal.nranges, n + 1, __ATOMIC_RELEASE);
	seal_close();
	/* Carve the old region's tail into free runs, largest first (a
	 * tail outside the area is not written: see in_area()). */
	if (st->end < st->bump ||
	    (st->end > st->bump && !in_area((void *)st->bump, st->end - st->bump)))
		st->bump = st->end;
	for (int o = META_ORDERS - 1; o >= 0; o--)
		while (st->end - st->bump >= (page << o)) {
			push((void *)st->bump, (unsigned)o);
			st->bump += page << o;
		}
	st->bump = (uintptr_t)p;
	st->end = (uintptr_t)p + len;
	return 0;
}

static bool in_ranges(const void *p, size_t sz)
{
	return in_seal((uintptr_t)p, (uintptr_t)p + sz, true);
}

/*
 * Sealed, the area is the heap-meta domain's memory, and the state that
 * says where the next run is (free lists, bump) lives in it, written only
 * with the area open.  Each run, and each heap handle a call is given, is
 * still checked before it is used: against the seal page's ranges, which
 * are read-only while sealed, and the core's record of the domain's
 * regions (lock-free), which is writable data: a region forged there
 * alone does not make a run or a handle the area's.  One that fails is
 * refused (ENOMEM, EINVAL), and nothing is read or written through it.
 * Open, nothing is sealed to check against.
 */
static bool in_area(const void *p, size_t sz)
{
	mpk_domain *d = mpk__meta_dom;

	return !d || (in_ranges(p, sz) && mpk_domain_of(p) == d &&
		      (sz == 1 || mpk_domain_of((const char *)p + sz - 1) == d));
}

void *mpk__meta_alloc(size_t len)
{
	struct meta_state *st = seal.st;
	unsigned o = order_of(len);
	size_t sz = mpk__page() << o;
	void *p;

	if (o >= META_ORDERS) {
		errno = ENOMEM;
		return NULL;
	}
	if (!st) {
		if (meta_make())
			return NULL;
		st = seal.st;
	}
	if ((p = st->free[o])) {
		if (!in_area(p, sz)) {
			errno = ENOMEM;
			return NULL;
		}
		st->free[o] = *(void **)p;
		*(void **)p = NULL; /* the rest was purged: zero */
		return p;
	}
	if (st->end - st->bump < sz && grow(sz))
		return NULL;
	p = (void *)st->bump;
	if (!in_area(p, sz)) {
		errno = ENOMEM;
		return NULL;
	}
	st->bump += sz;
	return p;
}

void mpk__meta_free(void *p, size_t len)
{
	unsigned o = order_of(len);

	mpk_os_madvise(p, mpk__page() << o, MADV_DONTNEED);
	push(p, o);
}
