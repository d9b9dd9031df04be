/* SPDX-License-Identifier: MIT */
/*
 * Guarded heaps: size classes and slabs, block headers, the checks that
 * catch misuse, and the public calls.
 *
 * Small blocks (up to 3584 bytes with their header) come from slabs: page
 * runs of one size class with a free bitmap in the metadata, so nothing an
 * overflow can reach says where the next block goes.  Larger ones are page
 * runs of their own, and past 128 KiB, regions of their own.  Every
 * block of an ordinary heap starts with a 16-byte header: the requested
 * size and a checksum keyed per heap over the address, size and offset.
 *
 * Each call opens the metadata for the calling thread, and the heap's
 * domain only when it must touch a block and the thread lacks the rights,
 * and puts both back as they were before it returns.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "heap.h"

static const uint16_t class_size[NCLASSES] = {
	16, 32, 48, 64, 80, 96, 112, 128,
	160, 192, 224, 256, 320, 384, 448, 512,
	640, 768, 896, 1024, 1280, 1536, 1792, 2048,
	2560, 3072, 3584,
};
static uint8_t class_of16[SMALL_MAX / 16 + 1]; /* ceil(n / 16) -> class */
static uint8_t slab_pages[NCLASSES];
static uint16_t slab_blocks[NCLASSES];
static uint32_t class_inv[NCLASSES]; /* ceil(2^32 / size): index by multiply */
static unsigned narenas_default;     /* twice the CPUs, a power of two, up to 8 */
/* Page-run blocks the thread caches take: a run of one of these lengths
 * (blocks needing up to ltc_max bytes get one, rounded up). */
static const uint8_t lclass_pages[NLCLASSES] = { 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20 };
static uint8_t lclass_of[21]; /* pages -> class */
static size_t ltc_max;        /* 20 pages, at most LARGE_MAX */
static uint32_t tc_cap[NTC];  /* usable bytes of a cached block of the class */
static uint64_t tc_off[NTC];  /* the offset its header's check covers */
static pthread_once_t classes_once = PTHREAD_ONCE_INIT;

/* Added to the offset a header's check covers for blocks that are not
 * in a slab (a page run's or region's block never passes for a small
 * one), and for a page run its length: the thread caches, which trust
 * the header, hand a run out again only as the length it was made. */
#define OFF_RUN ((size_t)1 << 40)
static inline uint64_t run_off(size_t off, size_t pages)
{
	return off + OFF_RUN + ((uint64_t)pages << 41);
}

/* Slab lengths: the fewest pages (up to 8) that waste the least. */
bool mpk__san_vg;

static void classes_init(void)
{
	mpk__san_vg = SAN_VG_PROBE();
	size_t page = mpk__heap_page = mpk_os_page_size();
	unsigned c = 0;

	while (((size_t)1 << mpk__heap_page_shift) < page)
		mpk__heap_page_shift++;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	narenas_default = 1;
	while (narenas_default < ARENAS_MAX && narenas_default < 2 * cpus)
		narenas_default *= 2;

	for (unsigned i = 0; i <= SMALL_MAX / 16; i++) {
		while (class_size[c] < i * 16)
			c++;
		class_of16[i] = (uint8_t)c;
	}
	for (c = 0; c < NCLASSES; c++) {
		size_t s = class_size[c], best = 0, best_waste = 0;
		for (size_t k = 1; k <= 8; k++) {
			size_t n = k * page / s;
			if (n > SLAB_BLOCKS_MAX)
				n = SLAB_BLOCKS_MAX;
			size_t waste = k * page - n * s;
			if (!best || waste * best < best_waste * k) {
				best = k;
				best_waste = waste;
			}
		}
		slab_pages[c] = (uint8_t)best;
		slab_blocks[c] = (uint16_t)(best * page / s > SLAB_BLOCKS_MAX ? SLAB_BLOCKS_MAX
									    : best * page / s);
		class_inv[c] = (uint32_t)(((1ull << 32) + s - 1) / s);
		/* About 16 KiB of each class per thread, 4 to TC_MAX blocks. */
		size_t lim = 16384 / s;
		mpk__tc_lim[c] = (uint8_t)(lim < 4 ? 4 : lim > TC_MAX ? TC_MAX : lim);
		tc_cap[c] = (uint32_t)(s - HDR);
		tc_off[c] = HDR;
	}
	ltc_max = (size_t)lclass_pages[NLCLASSES - 1] * page;
	if (ltc_max > LARGE_MAX)
		ltc_max = LARGE_MAX;
	for (unsigned pg = 1, k = 0; pg <= 20; pg++) {
		while (lclass_pages[k] < pg)
			k++;
		lclass_of[pg] = (uint8_t)k;
	}
	for (c = 0; c < NLCLASSES; c++) {
		size_t len = (size_t)lclass_pages[c] * page, lim = 65536 / len;
		mpk__tc_lim[NCLASSES + c] = (uint8_t)(lim < 2 ? 2 : lim > 8 ? 8 : lim);
		tc_cap[NCLASSES + c] = (uint32_t)(len - HDR);
		tc_off[NCLASSES + c] = run_off(HDR, lclass_pages[c]);
	}
}

/* Pages for a page-run block needing need bytes: rounded up to a cached
 * length when the caches take it. */
static size_t run_pages(size_t need)
{
	size_t pages = (need + mpk__page() - 1) >> mpk__heap_page_shift;

	return need <= ltc_max ? lclass_pages[lclass_of[pages]] : pages;
}

#define TC_INLINE static inline __attribute__((always_inline))

/* The cache class of a block of size bytes (with its header), or -1. */
TC_INLINE int tc_class(uint64_t size)
{
	if (likely(size - 1 < SMALL_MAX - HDR))
		return class_of16[(size + HDR + 15) >> 4];
	if (size - 1 < ltc_max - HDR)
		return NCLASSES + lclass_of[(size + HDR + mpk__heap_page - 1) >> mpk__heap_page_shift];
	return -1;
}

static inline bool has_hdr(const struct heap *h)
{
	return !(h->flags & (HEAP_SECRET | HEAP_GUARDS));
}

static inline uintptr_t round_up(uintptr_t x, size_t a)
{
	return (x + a - 1) & ~(uintptr_t)(a - 1);
}

/* ---- headers ---- */


static void hdr_put(const struct heap *h, uintptr_t p, size_t size, size_t off)
{
	mpk__hdr_set(p, size, mpk__hdr_sum(h->key, p, size, off));
}

/* ---- slabs ---- */

static void list_push(struct run **head, struct run *r)
{
	r->prev = NULL;
	r->next = *head;
	if (*head)
		(*head)->prev = r;
	*head = r;
}

static void list_del(struct run **head, struct run *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		*head = r->next;
	if (r->next)
		r->next->prev = r->prev;
	r->prev = r->next = NULL;
}

/* A free block of class cls: its start, or 0 with errno. */
static uintptr_t slab_alloc(struct arena *a, unsigned cls)
{
	struct bin *bin = &a->bins[cls];
	struct run *r = bin->partial;

	if (!r) {
		if ((r = bin->spare)) {
			if (mpk__chunk_idle(r->chunk))
				a->empty_chunks--;
			bin->spare = NULL;
			r->spare = 0;
			r->chunk->spare_pages = (uint16_t)(r->chunk->spare_pages - r->pages);
		} else {
			struct chunk *c;
			if (!(r = mpk__run_alloc(a, slab_pages[cls], &c)))
				return 0;
			r->kind = RUN_SLAB;
			r->cls = (uint8_t)cls;
			r->nfree = slab_blocks[cls];
			memset(r->bits, 0, sizeof(r->bits));
			for (unsigned i = 0; i < r->nfree; i++)
				r->bits[i / 64] |= 1ull << (i % 64);
		}
		list_push(&bin->partial, r);
	}
	unsigned w = 0;
	while (!r->bits[w])
		w++;
	unsigned i = w * 64 + (unsigned)__builtin_ctzll(r->bits[w]);
	r->bits[w] &= r->bits[w] - 1;
	if (!--r->nfree)
		list_del(&bin->partial, r);
	return run_addr(r->chunk, r) + (uintptr_t)i * class_size[cls];
}

static void slab_free(struct arena *a, struct run *r, unsigned i)
{
	struct bin *bin = &a->bins[r->cls];

	r->bits[i / 64] |= 1ull << (i % 64);
	if (!r->nfree++)
		list_push(&bin->partial, r);
	if (r->nfree < slab_blocks[r->cls])
		return;
	list_del(&bin->partial, r);
	struct chunk *c = r->chunk;
	/* Keep it, unless that keeps a second idle chunk mapped. */
	bool idles = c->nfree + c->spare_pages + r->pages == c->npages;
	if (!bin->spare && (!idles || !a->empty_chunks)) {
		bin->spare = r;
		r->spare = 1;
		c->spare_pages = (uint16_t)(c->spare_pages + r->pages);
		if (idles)
			a->empty_chunks++;
		return;
	}
	r->clean = 0;
	mpk__run_free(a, c, r);
}

/* ---- finding a block ---- */

enum { L_SLAB = 1, L_LARGE, L_BIG };

struct loc {
	int kind;
	struct run *r;
	unsigned idx;    /* L_SLAB */
	struct big b;    /* L_BIG: a copy of the entry */
	uintptr_t start; /* the block: slot, run or region */
	size_t cap;      /* usable bytes from p */
	size_t size;     /* requested (ordinary heaps and big blocks) */
};

/* 0 if p is a live block in arena ar (and *l says where), else
 * MPK_MISUSE_*.  c is the chunk holding p, if any.  Under the arena's lock,
 * with the metadata open and, in ordinary heaps, the domain readable.  Big
 * blocks and pointers that are not the heap's belong to arena 0. */
static int locate(struct arena *ar, uintptr_t a, struct loc *l, struct chunk *c)
{
	struct heap *h = ar->heap;
	size_t page = mpk__page(), hdr = has_hdr(h) ? HDR : 0;

	l->kind = 0;
	if (c) {
		if (c->heap != h)
			return MPK_MISUSE_FOREIGN;
		struct run *r = mpk__run_at(c, a);
		if (!r)
			return MPK_MISUSE_DOUBLE_FREE; /* this heap's free pages */
		uintptr_t rs = run_addr(c, r);
		l->r = r;
		if (r->kind == RUN_SLAB) {
			unsigned i = (unsigned)(((uint64_t)(a - rs) * class_inv[r->cls]) >> 32);
			if (i >= slab_blocks[r->cls])
				return MPK_MISUSE_WILD;
			uintptr_t b = rs + (uintptr_t)i * class_size[r->cls];
			size_t off = a - b;
			if ((r->bits[i / 64] >> (i % 64)) & 1)
				return off == hdr ? MPK_MISUSE_DOUBLE_FREE : MPK_MISUSE_WILD;
			if (hdr ? off < hdr || off % 16 : off != 0)
				return MPK_MISUSE_WILD;
			l->kind = L_SLAB;
			l->idx = i;
			l->start = b;
			l->cap = class_size[r->cls] - off;
		} else {
			if (a - rs != r->off)
				return MPK_MISUSE_WILD;
			l->kind = L_LARGE;
			l->start = rs;
			l->cap = (size_t)r->pages * page - r->off;
		}
	} else {
		pthread_mutex_lock(&mpk__meta_lock);
		struct big *b = mpk__big_find(a);
		if (b)
			l->b = *b;
		pthread_mutex_unlock(&mpk__meta_lock);
		if (!b)
			return MPK_MISUSE_WILD;
		if (l->b.heap != h)
			return l->b.state == BIG_LIVE ? MPK_MISUSE_FOREIGN : MPK_MISUSE_WILD;
		if (l->b.state != BIG_LIVE)
			return MPK_MISUSE_DOUBLE_FREE;
		l->kind = L_BIG;
		l->start = l->b.region;
		l->cap = l->b.region + l->b.reglen - a;
		l->size = l->b.size;
	}
	if (hdr) {
		const struct hdr hv = mpk__hdr_get(a), *hd = &hv;
		uint64_t off = a - l->start;
		if (l->kind == L_LARGE)
			off = run_off(off, l->r->pages);
		else if (l->kind == L_BIG)
			off += OFF_RUN;
		if (hd->size > l->cap || hd->check != mpk__hdr_sum(h->key, a, hd->size, off)) {
			/* Sitting in a thread's cache: freed already. */
			if (hd->size <= l->cap &&
			    hd->check == (mpk__hdr_sum(h->key, a, hd->size, off) ^ h->ckey))
				return MPK_MISUSE_DOUBLE_FREE;
			return l->kind == L_SLAB && a - l->start != HDR ? MPK_MISUSE_WILD
									: MPK_MISUSE_CORRUPT;
		}
		l->size = hd->size;
	} else if (l->kind != L_BIG) {
		l->size = l->cap;
	}
	return 0;
}

/* locate() under the right arena's lock, which stays held (in *ap). */
static int locate_locked(struct heap *h, uintptr_t a, struct loc *l, struct arena **ap)
{
	for (;;) {
		struct chunk *c = mpk__map_find(a);
		bool mine = c && c->heap == h;
		struct arena *ar = mine ? c->arena : &h->arenas[0];
		pthread_mutex_lock(&ar->lock);
		/* A chunk of ar cannot go while we hold its lock; if c went
		 * before (p was no block then), look again. */
		if (mine && (c->magic != CHUNK_MAGIC || c->arena != ar || a - c->base >= CHUNK_SIZE)) {
			pthread_mutex_unlock(&ar->lock);
			continue;
		}
		*ap = ar;
		return locate(ar, a, l, c);
	}
}

/* The calling thread's arena: threads take them round robin. */
static struct arena *pick(struct heap *h)
{
	static unsigned next;
	static __thread unsigned mine __attribute__((tls_model("initial-exec")));

	if (!mine)
		mine = __atomic_add_fetch(&next, 1, __ATOMIC_RELAXED) | 0x80000000u;
	return &h->arenas[mine & (h->narenas - 1)]; /* a power of two */
}

/* ---- the thread caches' fast paths and batches ---- */

/* Whether the thread may write the cache's domain (headers live there):
 * a keyed domain's bits; for a keyless one, whether its soft rights are
 * still those of the snapshot taken when the thread last held RW (core.h;
 * each slow call renews it, heap/cache.c). */
TC_INLINE bool tc_rw(const struct tcache *tc)
{
	const struct mpk__domain_head *d = (const struct mpk__domain_head *)tc->domain;
	int k = __atomic_load_n(&d->key, __ATOMIC_ACQUIRE);

	if (k >= 0)
		return mpk_arch_key_rights(mpk_arch_reg_read(), k) == MPK_RW;
	return mpk__soft_snap_same(&tc->rw);
}

/* A cached block for size, or NULL: none cached, not a small size, or
 * the thread may not write the header (the slow path then opens).  vg:
 * make valgrind's client requests (false on the fast paths). */
TC_INLINE void *tc_malloc(struct tcache *tc, size_t size, bool vg)
{
	int cls = tc_class(size);
	if (unlikely(cls < 0))
		return NULL; /* 0 too: the slow path makes it 1 */
	unsigned n = tc->n[cls];
	if (unlikely(!n) || unlikely(!tc_rw(tc)))
		return NULL;
	uintptr_t p = tc->slot[cls][n - 1] ^ tc->mkey;
	if (unlikely(p & 15)) {
		/* An entry overwritten without the key decodes misaligned
		 * (15 times in 16): drop the class's. */
		tc->n[cls] = 0;
		return NULL;
	}
	tc->n[cls] = (uint8_t)(n - 1);
	mpk__san_alloc_vg(p, tc_cap[cls], vg);
	/* Small blocks' offset is known without a load. */
	uint64_t off = cls < NCLASSES ? HDR : tc_off[cls];
	mpk__hdr_set_vg(p, size, mpk__hdr_sum(tc->key, p, size, off), vg);
	return (void *)p;
}

enum { TC_DONE, TC_NOT, TC_FULL };

/* Put p in the cache if it is a live small block of the cache's heap at
 * the usual offset, as its chunk tag and keyed header say; anything else
 * (including every misuse) goes the slow way, which names it. */
/* Whether a is in a chunk of the cache's heap: the chunk checked last
 * (no chunk has gone back since: the epoch has not moved, see tc_of() and
 * mpk__tc_attach()), or its tag. */
TC_INLINE bool tc_chunk_ok(struct tcache *tc, uintptr_t a)
{
	uintptr_t n = (a >> CHUNK_SHIFT) + 1;

	if (likely(n == tc->chunk))
		return true;
	if (mpk__chunk_tag(a) != tc->uid)
		return false;
	tc->chunk = n;
	return true;
}

/* Whether a is a live block of the cache's heap that a cache takes, as
 * its chunk tag and keyed header say (and the thread may write it): its
 * class, and its header in *hd; or -1. */
TC_INLINE int tc_live(struct tcache *tc, uintptr_t a, struct hdr *hd, bool vg)
{
	if (unlikely((a & 15) || !(a & (CHUNK_SIZE - 1))) || !tc_chunk_ok(tc, a) ||
	    unlikely(!tc_rw(tc)))
		return -1;
	*hd = mpk__hdr_get_vg(a, vg);
	uint64_t size = hd->size, off = HDR;
	int cls = tc_class(size);
	if (unlikely(cls < 0))
		return -1;
	if (unlikely(cls >= NCLASSES))
		off = tc_off[cls];
	if (unlikely(hd->check != mpk__hdr_sum(tc->key, a, size, off)))
		return -1;
	return cls;
}

TC_INLINE int tc_free(struct tcache *tc, void *ptr, bool vg)
{
	uintptr_t a = (uintptr_t)ptr;
	struct hdr hd;
	int cls = tc_live(tc, a, &hd, vg);

	if (cls < 0)
		return TC_NOT;
	uint64_t size = hd.size;
	unsigned n = tc->n[cls];
	if (unlikely(n >= mpk__tc_lim[cls]))
		return TC_FULL;
	mpk__hdr_set_vg(a, size, hd.check ^ tc->ckey, vg);
	mpk__san_free_vg(a, tc_cap[cls], vg);
	tc->slot[cls][n] = a ^ tc->mkey;
	tc->n[cls] = (uint8_t)(n + 1);
	return TC_DONE;
}

/* ---- blocks given back to another arena: its remote list ---- */

/*
 * A link sits in the block's first 8 bytes, mangled with the heap's ckey
 * and the block's own address (safe-linking): a write after free that
 * rewrites it decodes to an address that fails the drain's checks, which
 * then drop the rest of the list (a leak, not a corruption).  A listed
 * block's header still says "cached", so a second free of it is named a
 * double free.
 */
static inline uintptr_t link_key(const struct heap *h, uintptr_t a)
{
	return mpk__mix(h->ckey ^ a);
}

SAN_NO_ASAN static inline void link_set(const struct heap *h, uintptr_t a, uintptr_t next)
{
	mpk__san_hdr_open(a, sizeof(uintptr_t));
	*(uintptr_t *)a = next ^ link_key(h, a);
	mpk__san_hdr_close(a, sizeof(uintptr_t));
}

SAN_NO_ASAN static inline uintptr_t link_get(const struct heap *h, uintptr_t a)
{
	mpk__san_hdr_open(a, sizeof(uintptr_t));
	uintptr_t next = *(const uintptr_t *)a ^ link_key(h, a);
	mpk__san_hdr_close(a, sizeof(uintptr_t));
	return next;
}

/* Whether a is a small block of h sitting in a cache, as its keyed
 * header says (the domain readable). */
static bool cached_block(const struct heap *h, uintptr_t a)
{
	if ((a & 15) || mpk__chunk_tag(a) != h->uid)
		return false;
	struct hdr hd = mpk__hdr_get(a);
	return hd.size <= SMALL_MAX - HDR && hd.check == (mpk__hdr_sum(h->key, a, hd.size, HDR) ^ h->ckey);
}

/* Push the chain first..last (linked already) onto ar's remote list. */
static void remote_push(struct arena *ar, uintptr_t first, uintptr_t last)
{
	uintptr_t head = __atomic_load_n(&ar->remote, __ATOMIC_RELAXED);

	do
		link_set(ar->heap, last, head);
	while (!__atomic_compare_exchange_n(&ar->remote, &head, first, true, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED));
}

/* Give back small block a of arena a (locked), if it is one and in use:
 * its slot, bitmap bit and the counts. */
static void give_back(struct arena *held, struct chunk *c, uintptr_t a)
{
	struct run *r = mpk__run_at(c, a);

	if (!r || r->kind != RUN_SLAB)
		return;
	uintptr_t rs = run_addr(c, r);
	unsigned idx = (unsigned)(((uint64_t)(a - HDR - rs) * class_inv[r->cls]) >> 32);
	if (idx >= slab_blocks[r->cls] || rs + (uintptr_t)idx * class_size[r->cls] + HDR != a ||
	    ((r->bits[idx / 64] >> (idx % 64)) & 1))
		return;
	held->blocks--;
	held->bytes -= class_size[r->cls] - HDR;
	slab_free(held, r, idx);
}

/* Take ar's remote list (its lock held, the domain readable) and give
 * its blocks back; a link that fails the checks ends it. */
static void remote_drain(struct arena *ar)
{
	struct heap *h = ar->heap;
	uintptr_t a = __atomic_exchange_n(&ar->remote, 0, __ATOMIC_ACQUIRE);

	while (a) {
		struct chunk *c = mpk__map_find(a);
		if (!c || c->arena != ar || !cached_block(h, a))
			break;
		uintptr_t next = link_get(h, a);
		give_back(ar, c, a);
		a = next;
	}
}

static struct arena *pick(struct heap *h);

int mpk__tc_refill(struct tcache *tc, unsigned cls)
{
	unsigned want = mpk__tc_lim[cls] / 2, got = 0;
	struct arena *a = tc->arena;

	if (!a)
		a = tc->arena = pick(tc->heap);
	pthread_mutex_lock(&a->lock);
	/* Blocks other threads gave back come first (their links are in
	 * the blocks: the domain must be readable). */
	if (__atomic_load_n(&a->remote, __ATOMIC_RELAXED) && mpk__rights_now(tc->domain) == MPK_RW)
		remote_drain(a);
	while (got < want) {
		uintptr_t b = slab_alloc(a, cls);
		if (!b)
			break;
		/* Lowest address on top: handed out first. */
		tc->slot[cls][want - 1 - got++] = (b + HDR) ^ tc->mkey;
	}
	a->blocks += got;
	a->bytes += got * (size_t)(class_size[cls] - HDR);
	pthread_mutex_unlock(&a->lock);
	if (got < want)
		memmove(tc->slot[cls], tc->slot[cls] + (want - got), got * sizeof(uintptr_t));
	tc->n[cls] = (uint8_t)got;
	return got ? 0 : -1;
}

/* The k oldest blocks of a class go back: those of the thread's own
 * arena under its lock, those of other arenas onto their remote lists
 * (a chain per run of blocks of one arena), so a thread freeing another
 * thread's blocks does not wait for that thread's lock.  Without rights
 * to write the blocks, every block goes back under its arena's lock. */
/* A cached page-run block a goes back to its arena (locked). */
static void give_back_run(struct arena *held, struct chunk *c, uintptr_t a)
{
	struct run *r = mpk__run_at(c, a);

	if (!r || r->kind != RUN_LARGE || a - run_addr(c, r) != r->off)
		return;
	held->blocks--;
	held->bytes -= ((size_t)r->pages << mpk__heap_page_shift) - r->off;
	r->clean = 0;
	mpk__run_free(held, c, r);
}

void mpk__tc_flush(struct tcache *tc, unsigned cls, unsigned k)
{
	struct heap *h = tc->heap;
	struct arena *held = NULL, *own = tc->arena, *far = NULL;
	bool links = mpk__rights_now(tc->domain) == MPK_RW;
	uintptr_t first = 0, last = 0;

	if (!own)
		own = tc->arena = pick(h);
	for (unsigned i = 0; i < k; i++) {
		uintptr_t a = tc->slot[cls][i] ^ tc->mkey;
		struct chunk *c = mpk__map_find(a);
		if (!c || c->heap != h)
			continue; /* an overwritten entry: leave it be */
		if (c->arena != own && links && cls < NCLASSES) {
			if (!cached_block(h, a))
				continue;
			if (c->arena != far) {
				if (far)
					remote_push(far, first, last);
				far = c->arena;
				first = last = a;
				continue;
			}
			link_set(h, a, first);
			first = a;
			continue;
		}
		if (c->arena != held) {
			if (held)
				pthread_mutex_unlock(&held->lock);
			pthread_mutex_lock(&(held = c->arena)->lock);
		}
		if (cls < NCLASSES)
			give_back(held, c, a);
		else
			give_back_run(held, c, a);
	}
	if (held)
		pthread_mutex_unlock(&held->lock);
	if (far)
		remote_push(far, first, last);
	unsigned n = tc->n[cls];
	memmove(tc->slot[cls], tc->slot[cls] + k, (n - k) * sizeof(uintptr_t));
	tc->n[cls] = (uint8_t)(n - k);
}

/* The calling thread's cache for hp if it is current: the handle was
 * checked when the cache was made, and no heap has gone since. */
static inline struct tcache *tc_of(const mpk_heap *hp)
{
	struct tcache *tc = mpk__tc_last;

	if (likely(tc && tc->heap == (const struct heap *)hp &&
		   tc->epoch == __atomic_load_n(&mpk__heap_epoch, __ATOMIC_RELAXED)))
		return tc;
	return NULL;
}

static inline bool cacheable(const struct heap *h)
{
	return !(h->flags & (HEAP_SECRET | HEAP_GUARDS));
}

/* Whose block is p: a heap (live chunk or live big block), or NULL. */
struct heap *mpk__heap_owner(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	struct chunk *c = mpk__map_find(a);
	struct heap *h = NULL;

	if (c)
		return c->magic == CHUNK_MAGIC ? c->heap : NULL;
	pthread_mutex_lock(&mpk__meta_lock);
	struct big *b = mpk__big_find(a);
	if (b && b->state == BIG_LIVE)
		h = b->heap;
	pthread_mutex_unlock(&mpk__meta_lock);
	return h;
}

void mpk__misuse_fill(struct mpk_misuse *m, int kind, const char *call, const void *p,
		      struct heap *h)
{
	memset(m, 0, sizeof(*m));
	m->kind = kind;
	m->call = call;
	m->addr = (void *)p;
	if (h) {
		m->heap = (h->flags & HEAP_SECRET) ? NULL : (mpk_heap *)h;
		m->domain = h->domain;
		m->domain_name = mpk_domain_name(h->domain);
	}
	if (kind == MPK_MISUSE_FOREIGN || kind == MPK_MISUSE_WILD) {
		struct heap *o = mpk__heap_owner(p);
		if (o && o != h && o->magic == HEAP_MAGIC) {
			m->kind = MPK_MISUSE_FOREIGN;
			m->owner = (o->flags & HEAP_SECRET) ? NULL : (mpk_heap *)o;
			m->owner_domain = o->domain;
			m->owner_domain_name = mpk_domain_name(o->domain);
		} else {
			m->kind = MPK_MISUSE_WILD;
		}
	}
}

/* ---- allocating and freeing ---- */

/* force_big: a region of its own whatever the size (a block realloc
 * keeps growing then grows in place, or by mremap, without copies). */
static void *heap_alloc(struct heap *h, size_t size, size_t align, bool zero, bool force_big)
{
	size_t page = mpk__page(), hdr = has_hdr(h) ? HDR : 0;
	uintptr_t p = 0, start = 0;
	size_t cap = 0;
	uint64_t off = 0; /* beyond p - start, in the header's check */
	bool fresh = false;
	mpk_scope s = { NULL, -1 };

	if (!size)
		size = 1;
	if (align < 16)
		align = 16;
	if (size > PTRDIFF_MAX / 2) {
		errno = ENOMEM;
		return NULL;
	}
	size_t need = size + hdr + (align > 16 ? align - 16 : 0);
	bool big = (h->flags & HEAP_GUARDS) || need > LARGE_MAX || force_big;
	struct arena *a = big ? &h->arenas[0] : pick(h);
	/* Writing the header needs the domain; do it before the lock. */
	if (hdr && mpk__heap_reach(h->domain, MPK_RW, &s))
		return NULL;
	pthread_mutex_lock(&a->lock);
	/* A forked child: its vault's pages are not locked (mlock is not
	 * inherited); lock them before handing out a secret. */
	if ((h->flags & HEAP_SECRET) &&
	    h->lock_gen != __atomic_load_n(&mpk__fork_gen, __ATOMIC_RELAXED)) {
		if (mpk__vault_relock(h)) {
			pthread_mutex_unlock(&a->lock);
			return NULL;
		}
		h->lock_gen = mpk__fork_gen;
	}
	if (big) {
		struct big b;
		if ((p = (uintptr_t)mpk__big_alloc(a, size, align, &b))) {
			start = b.region;
			cap = b.region + b.reglen - p;
			fresh = !b.reused;
			off = OFF_RUN;
		}
	} else if (need <= SMALL_MAX) {
		unsigned cls = class_of16[(need + 15) / 16];
		if ((start = slab_alloc(a, cls))) {
			p = round_up(start + hdr, align);
			cap = class_size[cls] - (p - start);
		}
	} else {
		struct chunk *c;
		struct run *r = mpk__run_alloc(a, run_pages(need), &c);
		if (r) {
			r->kind = RUN_LARGE;
			start = run_addr(c, r);
			p = round_up(start + hdr, align);
			r->off = (uint32_t)(p - start);
			cap = (size_t)r->pages * page - r->off;
			fresh = r->clean;
			off = run_off(0, r->pages);
		}
	}
	if (p) {
		a->blocks++;
		a->bytes += cap;
	}
	pthread_mutex_unlock(&a->lock);
	if (p) {
		if (hdr) {
			mpk__san_alloc(p, cap);
			hdr_put(h, p, size, p - start + off);
		}
		/* Vault memory is zero: fresh, or wiped when freed. */
		if (zero && !fresh && !(h->flags & HEAP_SECRET))
			memset((void *)p, 0, size);
	}
	if (s.domain)
		mpk__heap_leave(&s);
	return (void *)p;
}

void *mpk__heap_alloc(struct heap *h, size_t size, size_t align, bool zero)
{
	return heap_alloc(h, size, align, zero, false);
}

/* Free a located block (its arena's lock held). */
static void drop(struct arena *ar, struct loc *l, uintptr_t a)
{
	ar->blocks--;
	ar->bytes -= l->cap;
	if (ar->heap->flags & HEAP_SECRET)
		explicit_bzero((void *)a, l->cap);
	else if (has_hdr(ar->heap))
		mpk__san_free(a, l->cap);
	switch (l->kind) {
	case L_SLAB:
		slab_free(ar, l->r, l->idx);
		break;
	case L_LARGE:
		l->r->clean = 0;
		mpk__run_free(ar, l->r->chunk, l->r);
		break;
	case L_BIG:
		pthread_mutex_lock(&mpk__meta_lock);
		mpk__big_remove(mpk__big_find(a));
		pthread_mutex_unlock(&mpk__meta_lock);
		mpk__big_free(ar, &l->b);
		break;
	}
}

/* Rights a call needs to the blocks: headers are read, secrets wiped. */
static int block_rights(const struct heap *h, bool write)
{
	if (h->flags & HEAP_SECRET)
		return write ? MPK_RW : MPK_NONE;
	if (h->flags & HEAP_GUARDS)
		return MPK_NONE;
	return write ? MPK_RW : MPK_READ;
}

int mpk__heap_release(struct heap *h, void *p, struct mpk_misuse *m, const char *call)
{
	int want = block_rights(h, h->flags & HEAP_SECRET);
	mpk_scope s = { NULL, -1 };
	struct loc l;

	if (want && mpk__heap_reach(h->domain, want, &s))
		return -1;
	struct arena *a;
	int kind = locate_locked(h, (uintptr_t)p, &l, &a);
	if (!kind)
		drop(a, &l, (uintptr_t)p);
	pthread_mutex_unlock(&a->lock);
	if (s.domain)
		mpk__heap_leave(&s);
	if (kind)
		mpk__misuse_fill(m, kind, call, p, h);
	return kind;
}

bool mpk__heap_live(struct heap *h, const void *p)
{
	struct loc l;
	struct arena *a;

	int kind = locate_locked(h, (uintptr_t)p, &l, &a);
	pthread_mutex_unlock(&a->lock);
	return !kind;
}

#define REALLOC_BIG ((size_t)16 << 10) /* growing past it: a region of its own */

/* realloc: in place when the block is big enough and not twice too big
 * (guarded blocks always move, to stay flush against their guard). */
static void *heap_realloc(struct heap *h, void *p, size_t size, struct mpk_misuse *m,
			  int *kindp)
{
	mpk_scope s = { NULL, -1 };
	struct loc l;
	void *q = NULL;

	*kindp = 0;
	if (!size)
		size = 1;
	if (size > PTRDIFF_MAX / 2) {
		errno = ENOMEM;
		return NULL;
	}
	if (mpk__heap_reach(h->domain, MPK_RW, &s))
		return NULL;
	struct arena *a;
	int kind = locate_locked(h, (uintptr_t)p, &l, &a);
	/* In place: growing within the block, or shrinking by less than half. */
	if (!kind && size <= l.cap && (size >= l.cap / 2 || size >= l.size) &&
	    !(h->flags & HEAP_GUARDS)) {
		if (l.kind == L_BIG && !has_hdr(h)) { /* else the header has it */
			pthread_mutex_lock(&mpk__meta_lock);
			mpk__big_find((uintptr_t)p)->size = size;
			pthread_mutex_unlock(&mpk__meta_lock);
		}
		if (has_hdr(h)) {
			uint64_t off = (uintptr_t)p - l.start;
			if (l.kind == L_LARGE)
				off = run_off(off, l.r->pages);
			else if (l.kind == L_BIG)
				off += OFF_RUN;
			hdr_put(h, (uintptr_t)p, size, off);
		}
		q = p;
	} else if (!kind && size > l.cap && has_hdr(h)) {
		/* Growing: a page run into the free pages after it, a big
		 * block by mremap (which moves no bytes). */
		size_t page = mpk__page(), off = (uintptr_t)p - l.start;
		size_t pages = (off + size + page - 1) / page;
		if (l.kind == L_LARGE && size < REALLOC_BIG) {
			pages = run_pages(off + size); /* a length the caches take */
			if (mpk__run_grow(a, l.r->chunk, l.r, pages)) {
				a->bytes += pages * page - off - l.cap;
				q = p;
			}
		} else if (l.kind == L_BIG) {
			q = (void *)mpk__big_resize(a, (uintptr_t)p, size);
		}
		if (q) {
			/* The same bytes, under a longer (maybe moved) block. */
			mpk__san_move((uintptr_t)p, (uintptr_t)q, pages * page - off, l.size);
			hdr_put(h, (uintptr_t)q, size,
				l.kind == L_LARGE ? run_off(off, l.r->pages) : off + OFF_RUN);
		}
	}
	pthread_mutex_unlock(&a->lock);
	if (kind) {
		mpk__misuse_fill(m, kind, "mpk_heap_realloc", p, h);
		*kindp = kind;
	} else if (!q && (q = heap_alloc(h, size, 16, false,
					 has_hdr(h) && size >= REALLOC_BIG && size > l.size))) {
		memcpy(q, p, size < l.size ? size : l.size);
		/* Located a moment ago: only a racing free of p by another
		 * thread fails here, and is reported as such. */
		int rc = mpk__heap_release(h, p, m, "mpk_heap_realloc");
		if (rc) {
			struct mpk_misuse none;
			int err = errno;
			mpk__heap_release(h, q, &none, "mpk_heap_realloc");
			errno = err;
			q = NULL;
			*kindp = rc > 0 ? rc : 0;
		}
	}
	if (s.domain)
		mpk__heap_leave(&s);
	return q;
}

/* ---- heaps ---- */

/* mpk__meta_put(), and with the last heap what lived in the area. */
static mpk_domain *forget_meta(void)
{
	bool last;
	mpk_domain *d = mpk__meta_put(&last);

	if (last) {
		mpk__map_reset();
		mpk__big_reset();
	}
	return d;
}

struct heap *mpk__heap_new(struct mpk_domain *d, unsigned flags)
{
	mpk_domain *gone = NULL;
	struct heap *h = NULL;
	mpk_scope s;
	int err;

	pthread_once(&classes_once, classes_init);
	mpk__heap_atfork();
	if (mpk__domain_hold(d))
		return NULL;
	pthread_mutex_lock(&mpk__heaps_lock);
	pthread_mutex_lock(&mpk__meta_lock);
	if (mpk__meta_get())
		goto fail;
	if (mpk__meta_open(&s))
		goto put;
	h = mpk__meta_alloc(sizeof(*h));
	if (h) {
		h->magic = HEAP_MAGIC;
		h->flags = flags;
		h->domain = d;
		static uint32_t uids;
		h->key = mpk__mix(mpk__meta_key() ^ (uintptr_t)h);
		h->ckey = mpk__mix(h->key + 1) | 1;
		if (!++uids)
			uids++; /* 0 tags no chunk */
		h->uid = uids; /* under the heaps lock */
		h->lock_gen = __atomic_load_n(&mpk__fork_gen, __ATOMIC_RELAXED);
		/* Vaults stay small (one arena: one set of locked slabs);
		 * guarded blocks all go to arena 0 anyway. */
		h->narenas = (flags & (HEAP_SECRET | HEAP_GUARDS)) ? 1 : narenas_default;
		for (unsigned i = 0; i < h->narenas; i++) {
			pthread_mutex_init(&h->arenas[i].lock, NULL);
			h->arenas[i].heap = h;
		}
		struct heap **head = mpk__meta_heaps();
		h->next = *head;
		if (*head)
			(*head)->prev = h;
		*head = h;
	}
	err = errno;
	mpk__meta_close(&s);
	if (h) {
		pthread_mutex_unlock(&mpk__meta_lock);
		pthread_mutex_unlock(&mpk__heaps_lock);
		return h;
	}
	errno = err;
put:
	err = errno;
	gone = forget_meta();
	errno = err;
fail:
	err = errno;
	pthread_mutex_unlock(&mpk__meta_lock);
	pthread_mutex_unlock(&mpk__heaps_lock);
	if (gone)
		mpk_domain_destroy(gone);
	mpk__domain_unhold(d);
	errno = err;
	return NULL;
}

/* Free everything of h; s is the caller's metadata scope, closed here
 * (before the metadata area may go with the last heap). */
void mpk__heap_delete(struct heap *h, mpk_scope *s)
{
	struct mpk_domain *d = h->domain;

	mpk__tc_forget(h);
	pthread_mutex_lock(&mpk__heaps_lock);
	if (h->prev)
		h->prev->next = h->next;
	else
		*mpk__meta_heaps() = h->next;
	if (h->next)
		h->next->prev = h->prev;
	pthread_mutex_unlock(&mpk__heaps_lock);
	for (unsigned i = 0; i < h->narenas; i++) {
		struct arena *a = &h->arenas[i];
		/* Take the lock once: a call still running there finishes. */
		pthread_mutex_lock(&a->lock);
		pthread_mutex_unlock(&a->lock);
		pthread_mutex_destroy(&a->lock);
		mpk__chunks_release(a);
	}
	mpk__bigs_release(h);
	h->magic = 0;
	pthread_mutex_lock(&mpk__meta_lock);
	mpk__meta_free(h, sizeof(*h));
	mpk_domain *gone = forget_meta();
	pthread_mutex_unlock(&mpk__meta_lock);
	mpk__meta_close(s);
	if (gone)
		mpk_domain_destroy(gone);
	mpk__domain_unhold(d);
}

/* ---- the public calls ---- */

/*
 * Open the metadata and check the handle: the heap, or NULL with errno.
 * err is the caller's verdict on its other arguments: failing for them
 * before opening anything keeps a rejected call free of system calls.
 */
static struct heap *begin_err(mpk_heap *hp, mpk_scope *s, int err)
{
	struct heap *h = (struct heap *)hp;

	if (mpk__ensure_init())
		return NULL;
	/* No heap yet: no page size, and no metadata area to hold h. */
	if (!h || !mpk__meta_contains(h) || ((uintptr_t)h & (mpk__page() - 1)))
		err = EINVAL;
	if (err) {
		errno = err;
		return NULL;
	}
	if (mpk__meta_open(s))
		return NULL;
	if (h->magic != HEAP_MAGIC || (h->flags & HEAP_SECRET)) {
		mpk__meta_close(s);
		errno = EINVAL;
		return NULL;
	}
	if (s->domain)
		__atomic_add_fetch(&h->meta_opens, 1, __ATOMIC_RELAXED);
	return h;
}

static struct heap *begin(mpk_heap *hp, mpk_scope *s)
{
	return begin_err(hp, s, 0);
}

MPK_EXPORT mpk_heap *mpk_heap_create(mpk_domain *d, unsigned flags)
{
	if (mpk__ensure_init())
		return NULL;
	if (!mpk__domain_valid(d) || (flags & ~HEAP_GUARDS) || (flags & HEAP_GUARDS) == HEAP_GUARDS) {
		errno = EINVAL;
		return NULL;
	}
	return (mpk_heap *)mpk__heap_new(d, flags);
}

MPK_EXPORT int mpk_heap_destroy(mpk_heap *hp)
{
	mpk_scope s;
	struct heap *h = begin(hp, &s);

	if (!h)
		return -1;
	mpk__heap_delete(h, &s);
	return 0;
}

MPK_EXPORT mpk_domain *mpk_heap_domain(const mpk_heap *hp)
{
	mpk_scope s;
	struct heap *h = begin((mpk_heap *)hp, &s);

	if (!h)
		return NULL;
	mpk_domain *d = h->domain;
	mpk__meta_close(&s);
	return d;
}

/* malloc and calloc past their fast path: through the cache if they can. */
static __attribute__((noinline)) void *alloc_slow(mpk_heap *hp, size_t size, bool zero, int err)
{
	mpk_scope s;
	struct heap *h = begin_err(hp, &s, err);
	void *p = NULL;

	if (!h)
		return NULL;
	if (cacheable(h) && size - 1 < SMALL_MAX - HDR) {
		struct tcache *tc = mpk__tc_attach(h);
		unsigned cls = class_of16[(size + HDR + 15) >> 4];
		if (tc && (tc->n[cls] || !mpk__tc_refill(tc, cls)) && (p = tc_malloc(tc, size, mpk__san_vg)) &&
		    zero)
			memset(p, 0, size);
	}
	if (!p)
		p = mpk__heap_alloc(h, size, 16, zero);
	mpk__meta_close(&s);
	mpk__tc_renew();
	return p;
}

/* A slow path called as a call, not a jump: under valgrind every call
 * goes that way, and a block's "alloc'd" stack should name the public
 * call (the fast path has a frame anyway). */
static inline void *not_tail(void *p)
{
	__asm__("" : "+r"(p));
	return p;
}

MPK_EXPORT void *mpk_heap_malloc(mpk_heap *hp, size_t size)
{
	struct tcache *tc = tc_of(hp);
	void *p;

	if (likely(tc) && likely(p = tc_malloc(tc, size, false)))
		return p;
	return not_tail(alloc_slow(hp, size, false, 0));
}

MPK_EXPORT void *mpk_heap_calloc(mpk_heap *hp, size_t n, size_t size)
{
	struct tcache *tc = tc_of(hp);
	size_t total;
	bool over = __builtin_mul_overflow(n, size, &total);
	void *p;

	if (likely(tc && !over) && (p = tc_malloc(tc, total, false)))
		return memset(p, 0, total);
	return not_tail(alloc_slow(hp, total, true, over ? ENOMEM : 0));
}

MPK_EXPORT void *mpk_heap_aligned_alloc(mpk_heap *hp, size_t align, size_t size)
{
	mpk_scope s;
	bool bad = !align || (align & (align - 1)) || align > ALIGN_MAX;
	struct heap *h = begin_err(hp, &s, bad ? EINVAL : 0);

	if (!h)
		return NULL;
	void *p = mpk__heap_alloc(h, size, align, false);
	mpk__meta_close(&s);
	return p;
}

/* free past its fast path: a full cache gives half back; blocks the
 * cache does not take (and misuse) go through the arena. */
static __attribute__((noinline)) int free_slow(mpk_heap *hp, void *p)
{
	struct mpk_misuse m;
	mpk_scope s;
	struct heap *h = begin(hp, &s);
	int rc = -2;

	if (!h)
		return -1;
	if (!p) {
		rc = 0;
	} else if (cacheable(h)) {
		struct tcache *tc = mpk__tc_attach(h);
		int k = tc ? tc_free(tc, p, mpk__san_vg) : TC_NOT;
		if (k == TC_FULL) {
			int cls = tc_class(mpk__hdr_get((uintptr_t)p).size);
			mpk__tc_flush(tc, (unsigned)cls, mpk__tc_lim[cls] / 2);
			k = tc_free(tc, p, mpk__san_vg);
		}
		if (k == TC_DONE)
			rc = 0;
	}
	if (rc == -2)
		rc = mpk__heap_release(h, p, &m, "mpk_heap_free");
	mpk__meta_close(&s);
	mpk__tc_renew();
	return mpk__misuse_rc(rc, &m);
}

MPK_EXPORT int mpk_heap_free(mpk_heap *hp, void *p)
{
	struct tcache *tc = tc_of(hp);

	if (likely(tc && p) && likely(tc_free(tc, p, false) == TC_DONE))
		return 0;
	return free_slow(hp, p);
}

static void *realloc_slow(mpk_heap *hp, void *p, size_t size);

/* realloc of a cached-class block to a cached-class size through the
 * cache: in place within its class, else a cached block of the new class
 * (NULL: the slow path then does it, and names any misuse; it also takes
 * blocks growing past REALLOC_BIG, which get a region of their own). */
static inline void *tc_realloc(struct tcache *tc, mpk_heap *hp, void *p, size_t size,
			       struct heap *h, bool vg)
{
	uintptr_t a = (uintptr_t)p;
	struct hdr hd;
	int cls = tc_class(size), old;

	if (cls < 0 || (old = tc_live(tc, a, &hd, vg)) < 0 || (size >= REALLOC_BIG && size > hd.size))
		return NULL;
	if (cls == old) {
		mpk__hdr_set_vg(a, size, mpk__hdr_sum(tc->key, a, size, tc_off[cls]), vg);
		return p;
	}
	void *q = tc_malloc(tc, size, vg);
	if (!q && h) {
		/* The slow path (metadata open): a batch, or a page run. */
		if (cls >= NCLASSES)
			q = mpk__heap_alloc(h, size, 16, false);
		else if (!mpk__tc_refill(tc, (unsigned)cls))
			q = tc_malloc(tc, size, vg);
	}
	if (!q)
		return NULL;
	memcpy(q, p, size < hd.size ? size : hd.size);
	int k = tc_free(tc, p, vg);
	if (k == TC_FULL && h) {
		mpk__tc_flush(tc, (unsigned)old, mpk__tc_lim[old] / 2);
		k = tc_free(tc, p, vg);
	}
	if (k != TC_DONE)
		mpk_heap_free(hp, p); /* the usual way (it opens what it needs) */
	return q;
}

MPK_EXPORT void *mpk_heap_realloc(mpk_heap *hp, void *p, size_t size)
{
	struct tcache *tc = tc_of(hp);
	void *q;

	if (likely(tc && p) && (q = tc_realloc(tc, hp, p, size, NULL, false)))
		return q;
	return not_tail(realloc_slow(hp, p, size));
}

static __attribute__((noinline)) void *realloc_slow(mpk_heap *hp, void *p, size_t size)
{
	struct mpk_misuse m;
	mpk_scope s;
	struct heap *h = begin_err(hp, &s, size > PTRDIFF_MAX / 2 ? ENOMEM : 0);
	int kind = 0;
	void *q;

	if (!h)
		return NULL;
	struct tcache *tc = p && cacheable(h) ? mpk__tc_attach(h) : NULL;
	if (!tc || !(q = tc_realloc(tc, hp, p, size, h, mpk__san_vg)))
		q = p ? heap_realloc(h, p, size, &m, &kind) : mpk__heap_alloc(h, size, 16, false);
	mpk__meta_close(&s);
	mpk__tc_renew();
	if (kind) {
		mpk__misuse(&m);
		errno = EINVAL;
		return NULL;
	}
	return q;
}

MPK_EXPORT size_t mpk_heap_usable_size(mpk_heap *hp, const void *p)
{
	struct mpk_misuse m;
	mpk_scope s, b = { NULL, -1 };
	struct heap *h = begin_err(hp, &s, p ? 0 : EINVAL);
	struct loc l;
	int kind = 0;

	if (!h)
		return 0;
	int want = block_rights(h, false);
	if (want && mpk__heap_reach(h->domain, want, &b)) {
		mpk__meta_close(&s);
		return 0;
	}
	struct arena *a;
	kind = locate_locked(h, (uintptr_t)p, &l, &a);
	pthread_mutex_unlock(&a->lock);
	if (b.domain)
		mpk__heap_leave(&b);
	if (kind)
		mpk__misuse_fill(&m, kind, "mpk_heap_usable_size", p, h);
	mpk__meta_close(&s);
	if (kind) {
		mpk__misuse(&m);
		errno = EINVAL;
		return 0;
	}
	return l.cap;
}

MPK_EXPORT int mpk_heap_stats_get(mpk_heap *hp, struct mpk_heap_stats *st)
{
	mpk_scope s;
	struct heap *h = begin_err(hp, &s, st ? 0 : EINVAL);

	if (!h)
		return -1;
	memset(st, 0, sizeof(*st));
	/* The caller's cached blocks count as free; other threads' as in use
	 * until their caches give them back. */
	struct tcache *tc = cacheable(h) ? mpk__tc_attach(h) : NULL;
	if (tc)
		mpk__tc_flush_all(tc);
	/* Regions kept for big blocks go back too: mapped says what is used. */
	pthread_mutex_lock(&h->arenas[0].lock);
	mpk__bigs_trim(&h->arenas[0]);
	pthread_mutex_unlock(&h->arenas[0].lock);
	/* Blocks on remote lists are free: counted so once given back. */
	mpk_scope b = { NULL, -1 };
	bool reach = cacheable(h) && !mpk__heap_reach(h->domain, MPK_RW, &b);
	for (unsigned i = 0; i < h->narenas; i++) {
		struct arena *a = &h->arenas[i];
		pthread_mutex_lock(&a->lock);
		if (reach)
			remote_drain(a);
		st->blocks += a->blocks;
		st->bytes += a->bytes;
		st->mapped += a->mapped;
		pthread_mutex_unlock(&a->lock);
	}
	if (b.domain)
		mpk__heap_leave(&b);
	st->flags = h->flags;
	st->meta_closed = mpk__meta_closed();
	st->meta_opens = __atomic_load_n(&h->meta_opens, __ATOMIC_RELAXED);
	mpk__meta_close(&s);
	return 0;
}
