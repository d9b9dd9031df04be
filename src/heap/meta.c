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
#define META_RANGES 64

enum { MODE_AUTO = MPK_META_AUTO, MODE_OPEN = MPK_META_OPEN, MODE_CLOSED = MPK_META_CLOSED };

pthread_mutex_t mpk__meta_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t mpk__heaps_lock = PTHREAD_MUTEX_INITIALIZER;
static struct heap *heaps; /* the registry, under mpk__heaps_lock */

/* Closed: the "heap-meta" domain; atomic.  Apart, for the inline open. */
mpk_domain *mpk__meta_dom;

static struct {
	bool ready;
	struct { uintptr_t lo, hi; } range[META_RANGES];
	unsigned nranges;         /* atomic: read without the lock */
	void *free[META_ORDERS];  /* links live in the (open) area */
	uintptr_t bump, end;
	int nheaps;
	uint64_t key;
} meta;

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

int mpk__meta_get(void)
{
	if (meta.ready) {
		meta.nheaps++;
		return 0;
	}
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
	meta.key = random_key();
	meta.ready = true;
	meta.nheaps = 1;
	return 0;
}

mpk_domain *mpk__meta_put(bool *last)
{
	mpk_domain *d = mpk__meta_dom;
	unsigned n = meta.nranges;

	if ((*last = !--meta.nheaps) == false)
		return NULL;
	/* The last heap is gone: nothing in the area is in use. */
	__atomic_store_n(&meta.nranges, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&mpk__meta_dom, NULL, __ATOMIC_RELEASE);
	if (!d) /* after lockdown the filter covers them: kept for the next area */
		for (unsigned i = 0; i < n; i++)
			mpk__covered_unmap((void *)meta.range[i].lo, meta.range[i].hi - meta.range[i].lo);
	memset(&meta, 0, sizeof(meta));
	if (d)
		mpk__domain_unhold(d);
	return d; /* the caller destroys it, without the lock */
}

static bool in_area(const void *p, size_t sz);

bool mpk__meta_contains(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	unsigned n = __atomic_load_n(&meta.nranges, __ATOMIC_ACQUIRE);

	/* Sealed: the core's record, as in_area() (the ranges are .bss). */
	if (__atomic_load_n(&mpk__meta_dom, __ATOMIC_ACQUIRE))
		return in_area(p, 1);

	for (unsigned i = 0; i < n; i++)
		if (a >= meta.range[i].lo && a < meta.range[i].hi)
			return true;
	return false;
}

struct heap **mpk__meta_heaps(void)
{
	return &heaps;
}

uint64_t mpk__meta_key(void)
{
	return meta.key;
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
	*(void **)p = meta.free[order];
	meta.free[order] = p;
}

/* A new region for the area; what is left of the old one is kept. */
/* The area's ranges, for the lockdown filter (core.h): registered with
 * the core before the first one exists (tests call it too). */
void mpk__meta_ranges_each(void (*fn)(uintptr_t lo, uintptr_t hi, void *arg), void *arg)
{
	unsigned n = __atomic_load_n(&meta.nranges, __ATOMIC_ACQUIRE);

	for (unsigned i = 0; i < n; i++)
		fn(meta.range[i].lo, meta.range[i].hi, arg);
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

static int grow(size_t len)
{
	size_t page = mpk__page();
	unsigned n = meta.nranges;
	void *p;

	if (n == META_RANGES) {
		errno = ENOMEM;
		return -1;
	}
	if (len < META_REGION)
		len = META_REGION;
	if (register_ranges())
		return -1;
	if (mpk__meta_dom) {
		p = mpk__alloc_owned(mpk__meta_dom, len);
		if (!p)
			return -1;
	} else {
		/* Outside the windows: after lockdown, what an area before
		 * left, or a filter of its own. */
		p = mpk__covered_map(len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (!p) {
			errno = ENOMEM;
			return -1;
		}
		mpk_os_name_region(p, len, "heap-meta");
	}
	/* Carve the old region's tail into free runs, largest first (a
	 * tail outside the area is not written: see in_area()). */
	if (meta.end < meta.bump ||
	    (meta.end > meta.bump && !in_area((void *)meta.bump, meta.end - meta.bump)))
		meta.bump = meta.end;
	for (int o = META_ORDERS - 1; o >= 0; o--)
		while (meta.end - meta.bump >= (page << o)) {
			push((void *)meta.bump, (unsigned)o);
			meta.bump += page << o;
		}
	meta.range[n].lo = (uintptr_t)p;
	meta.range[n].hi = (uintptr_t)p + len;
	__atomic_store_n(&meta.nranges, n + 1, __ATOMIC_RELEASE);
	meta.bump = (uintptr_t)p;
	meta.end = (uintptr_t)p + len;
	return 0;
}


/*
 * Sealed, the area is the heap-meta domain's memory, and a run it hands
 * out must lie there.  The free lists and the bump pointer that say where
 * the next run is sit in libmpkit's .bss, outside the seal: a write there
 * could point them at a global, and the next heap or chunk descriptor
 * would be the writer's.  So each run is checked against the core's
 * record of the domain's regions (lock-free), not against the ranges
 * beside the pointers; one that fails is refused (ENOMEM), and nothing is
 * read or written through it.  Open, nothing is sealed to check against.
 */
static bool in_area(const void *p, size_t sz)
{
	mpk_domain *d = mpk__meta_dom;

	return !d || (mpk_domain_of(p) == d && (sz == 1 || mpk_domain_of((const char *)p + sz - 1) == d));
}

void *mpk__meta_alloc(size_t len)
{
	unsigned o = order_of(len);
	size_t sz = mpk__page() << o;
	void *p;

	if (o >= META_ORDERS) {
		errno = ENOMEM;
		return NULL;
	}
	if ((p = meta.free[o])) {
		if (!in_area(p, sz)) {
			errno = ENOMEM;
			return NULL;
		}
		meta.free[o] = *(void **)p;
		*(void **)p = NULL; /* the rest was purged: zero */
		return p;
	}
	if (meta.end - meta.bump < sz && grow(sz))
		return NULL;
	p = (void *)meta.bump;
	if (!in_area(p, sz)) {
		errno = ENOMEM;
		return NULL;
	}
	meta.bump += sz;
	return p;
}

void mpk__meta_free(void *p, size_t len)
{
	unsigned o = order_of(len);

	mpk_os_madvise(p, mpk__page() << o, MADV_DONTNEED);
	push(p, o);
}
