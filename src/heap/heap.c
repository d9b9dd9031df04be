/* SPDX-License-Identifier: MIT */
/*
 * Guarded heaps: size classes and slabs, block headers, finding a block,
 * the checks that catch misuse, blocks given back across arenas, and
 * allocating and freeing inside a heap.  The public calls, their thread
 * cache fast paths, and heaps made and destroyed are in calls.c.
 *
 * Small blocks (up to 32 KiB with their header) come from slabs: page
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
#include <sys/mman.h>
#include <unistd.h>

#include "heap.h"

static const uint16_t class_size[NCLASSES] = {
	16, 32, 48, 64, 80, 96, 112, 128,
	160, 192, 224, 256, 320, 384, 448, 512,
	640, 768, 896, 1024, 1280, 1536, 1792, 2048,
	2560, 3072, 3584,
	/* Eight per power of two above 4 KiB: a block just past a class
	 * wastes at most an eighth, where a page run would waste up to half
	 * (4400 bytes took two pages). */
	3840, 4096, 4608, 5120, 5632, 6144, 6656, 7168,
	7680, 8192, 9216, 10240, 11264, 12288, 13312, 14336,
	15360, 16384, 18432, 20480, 22528, 24576, 26624, 28672,
	30720, 32768,
};
/* The tables made from them (heap.h): read-only once made, so that no
 * store outside the allocator can resize a slab or a class. */
union mpk__classes_page mpk__classes_pg __attribute__((aligned(SEAL_PAGE)));
_Static_assert(sizeof(union mpk__classes_page) == SEAL_PAGE, "the tables fill their page");
#define slab_pages (mpk__classes_pg.c.slab_pages)
#define slab_blocks (mpk__classes_pg.c.slab_blocks)
#define class_inv (mpk__classes_pg.c.class_inv)
/* Page-run blocks the thread caches take: runs of NLCLASSES lengths from
 * the first one past the slabs, a class per page. */
#define lclass_first (mpk__classes_pg.c.lclass_first)
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

/* Slab lengths: for classes up to a page, the fewest pages (up to 16)
 * that waste at most 1/SLAB_WASTE of the slab; else, and for larger
 * classes, those that waste the least (the large classes fit exactly,
 * some with several blocks per slab: a slab of 5632-byte blocks is 11
 * pages holding 8; 4608-byte blocks in 8 pages would waste 1.6% of a
 * page cache's memory).  Short slabs because an arena keeps a partial
 * slab of every class in use, resident: with the least waste alone,
 * 112-byte blocks took 7 pages a slab (none wasted) where one page
 * wastes 1.6%, and a thread making a few blocks of each class up to
 * 2 KiB had 86 pages of slabs in its arena, against 42 this way.  A
 * slab is at most 2^32 / size bytes long, so that index by multiply is
 * exact. */
#define SLAB_WASTE 64
bool mpk__san_vg;

static void classes_init(void)
{
	mpk__san_vg = SAN_VG_PROBE();
	size_t page = mpk__heap_page = mpk_os_page_size();
	unsigned c = 0;

	while (((size_t)1 << mpk__heap_page_shift) < page)
		mpk__heap_page_shift++;
	/* As many arenas as CPUs (a power of two, 2 to 8): no more threads
	 * than that run at once, and with the thread caches an arena's lock
	 * is taken once a batch.  Each arena in use keeps a partial slab of
	 * every class resident: churn (4 threads a wave, 2 CPUs) peaked at
	 * 3.6 MiB of RSS with 4 arenas, 3.0 with 2, larson at 10.1 and 7.3,
	 * their times the same. */
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	mpk__narenas_default = 2;
	while (mpk__narenas_default < ARENAS_MAX && mpk__narenas_default < cpus)
		mpk__narenas_default *= 2;

	for (unsigned i = 0; i <= SMALL_MAX / 16; i++) {
		while (class_size[c] < i * 16)
			c++;
		mpk__class_of16[i] = (uint8_t)c;
	}
	for (c = 0; c < NCLASSES; c++) {
		size_t s = class_size[c], best = 0, best_waste = 0;
		for (size_t k = 1; k <= 16 && (uint64_t)k * page * s <= (1ull << 32); k++) {
			size_t n = k * page / s;
			if (n > SLAB_BLOCKS_MAX)
				n = SLAB_BLOCKS_MAX;
			size_t waste = k * page - n * s;
			if (s <= page && n && waste * SLAB_WASTE <= k * page) {
				best = k; /* the first that wastes little enough */
				break;
			}
			if (!best || waste * best < best_waste * k) {
				best = k;
				best_waste = waste;
			}
		}
		slab_pages[c] = (uint8_t)best;
		slab_blocks[c] = (uint16_t)(best * page / s > SLAB_BLOCKS_MAX ? SLAB_BLOCKS_MAX
									    : best * page / s);
		class_inv[c] = (uint32_t)(((1ull << 32) + s - 1) / s);
		/* About 16 KiB of each class per thread, 4 to TC_MAX blocks;
		 * above 4 KiB, about 32 KiB and at least 2. */
		size_t lim = 16384 / s, min = s <= 4096 ? 4 : 2;
		mpk__tc_lim[c] = (uint8_t)(lim < min ? min : lim > TC_MAX ? TC_MAX : lim);
		mpk__tc_cap[c] = (uint32_t)(s - HDR);
		mpk__tc_off[c] = HDR;
	}
	lclass_first = (unsigned)(SMALL_MAX / page) + 1;
	mpk__lclass_base = NCLASSES - (int)lclass_first;
	mpk__ltc_max = (size_t)(lclass_first + NLCLASSES - 1) * page;
	if (mpk__ltc_max > LARGE_MAX)
		mpk__ltc_max = LARGE_MAX;
	for (c = 0; c < NLCLASSES; c++) {
		size_t len = (size_t)(lclass_first + c) * page, lim = 65536 / len;
		mpk__tc_lim[NCLASSES + c] = (uint8_t)(lim < 2 ? 2 : lim > 8 ? 8 : lim);
		mpk__tc_cap[NCLASSES + c] = (uint32_t)(len - HDR);
		mpk__tc_off[NCLASSES + c] = run_off(HDR, lclass_first + c);
	}
	/* For good (fork keeps it).  Failing (no memory for the split
	 * mapping), they stay writable, as before. */
	(void)!mpk_os_mprotect(&mpk__classes_pg, sizeof(mpk__classes_pg), PROT_READ);
}

void mpk__heap_classes_init(void)
{
	pthread_once(&classes_once, classes_init);
}

/* Pages for a page-run block needing need bytes (every length up to
 * mpk__ltc_max is a cache class of its own). */
static size_t run_pages(size_t need)
{
	return (need + mpk__page() - 1) >> mpk__heap_page_shift;
}

static inline uintptr_t round_up(uintptr_t x, size_t a)
{
	return (x + a - 1) & ~(uintptr_t)(a - 1);
}

/* ---- headers ---- */


static void hdr_put(const struct heap *h, uintptr_t p, size_t size, size_t off)
{
	uint64_t w = hdr_word(size);

	mpk__hdr_set(p, w, mpk__hdr_sum(h->key, p, w, hdr_off(w, off)));
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

/* A slab of class cls with a free block, first in its bin's partial
 * list (the spare, or a new one), or NULL with errno. */
static struct run *slab_partial(struct arena *a, unsigned cls)
{
	struct bin *bin = &a->bins[cls];
	struct run *r = bin->partial;

	if (r)
		return r;
	if ((r = bin->spare)) {
		if (mpk__chunk_idle(r->chunk))
			a->empty_chunks--;
		bin->spare = NULL;
		r->spare = 0;
		r->chunk->spare_pages = (uint16_t)(r->chunk->spare_pages - r->pages);
	} else {
		struct chunk *c;
		if (!(r = mpk__run_alloc(a, slab_pages[cls], &c)))
			return NULL;
		r->kind = RUN_SLAB;
		r->cls = (uint8_t)cls;
		r->nfree = slab_blocks[cls];
		memset(r->live, 0, sizeof(r->live));
		/* The first nfree bits set, a word at a time. */
		for (unsigned w = 0; w < SLAB_BLOCKS_MAX / 64; w++) {
			unsigned left = r->nfree > w * 64 ? r->nfree - w * 64 : 0;
			r->bits[w] = left >= 64 ? ~0ull : (1ull << left) - 1;
		}
	}
	list_push(&bin->partial, r);
	return r;
}

/* Up to want free blocks of class cls into out, lowest address first
 * within a slab, a slab's free blocks taken in one pass over its bitmap
 * (a refill's batch, not a search per block): how many (fewer: errno). */
static unsigned slab_take(struct arena *a, unsigned cls, uintptr_t *out, unsigned want)
{
	size_t size = class_size[cls];
	unsigned got = 0;

	while (got < want) {
		struct run *r = slab_partial(a, cls);
		if (!r)
			break;
		uintptr_t base = run_addr(r->chunk, r);
		unsigned n = r->nfree < want - got ? r->nfree : want - got;
		r->nfree = (uint16_t)(r->nfree - n);
		for (unsigned w = 0; n && w < SLAB_BLOCKS_MAX / 64; w++) {
			uint64_t bits = r->bits[w];
			for (; bits && n; n--) {
				out[got++] = base + (w * 64 + (unsigned)__builtin_ctzll(bits)) * size;
				bits &= bits - 1;
			}
			/* Atomic: vaults' lists read the bits of blocks in
			 * use without the lock (vlist.c). */
			__atomic_store_n(&r->bits[w], bits, __ATOMIC_RELAXED);
		}
		if (!r->nfree)
			list_del(&a->bins[cls].partial, r);
	}
	return got;
}

/* A free block of class cls: its start, or 0 with errno. */
static uintptr_t slab_alloc(struct arena *a, unsigned cls)
{
	uintptr_t b;

	return slab_take(a, cls, &b, 1) ? b : 0;
}

/* Whether the slab went back as a free run (its chunk may have gone
 * with it). */
TC_INLINE bool slab_free(struct arena *a, struct run *r, unsigned i)
{
	struct bin *bin = &a->bins[r->cls];
	uint64_t mask = 1ull << (i % 64);

	__atomic_store_n(&r->bits[i / 64], r->bits[i / 64] | mask, __ATOMIC_RELAXED);
	/* A vault block was claimed before it came back (vlist.c): free
	 * first, then unclaimed, so a list naming it finds it free. */
	if (mpk__vault(a->heap))
		__atomic_fetch_and(&r->live[i / 64], ~mask, __ATOMIC_RELEASE);
	if (!r->nfree++)
		list_push(&bin->partial, r);
	if (r->nfree < slab_blocks[r->cls])
		return false;
	list_del(&bin->partial, r);
	struct chunk *c = r->chunk;
	/* Keep it, unless that keeps a second idle chunk mapped. */
	bool idles = c->nfree + c->spare_pages + r->pages == c->npages;
	bool keep = !bin->spare && (!idles || !a->empty_chunks);
	if (keep && mpk__vault_keeps_spare(a, r, idles)) {
		bin->spare = r;
		r->spare = 1;
		c->spare_pages = (uint16_t)(c->spare_pages + r->pages);
		if (idles)
			a->empty_chunks++;
		return false;
	}
	r->clean = 0;
	mpk__run_free(a, c, r);
	return true;
}

/* ---- finding a block ---- */

/* 0 if p is a live block in arena ar (and *l says where), else
 * MPK_MISUSE_*.  c is the chunk holding p, if any.  Under the arena's lock,
 * with the metadata open and, in ordinary heaps, the domain readable.  Big
 * blocks and pointers that are not the heap's belong to arena 0. */
static int locate(struct arena *ar, uintptr_t a, struct loc *l, struct chunk *c)
{
	struct heap *h = ar->heap;
	size_t page = mpk__page(), hdr = mpk__heap_headers(h) ? HDR : 0;

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
			/* Sealed, only the slot's start (heap_alloc()): a
			 * header forged inside a live block is no block. */
			if (hdr ? off < hdr || off % 16 || (off != hdr && mpk__meta_closed()) : off != 0)
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
		const struct hdr hd = mpk__hdr_get(a);
		uint64_t off = a - l->start, size = hd.size & HDR_SIZE_MASK;
		if (l->kind == L_LARGE)
			off = run_off(off, l->r->pages);
		else if (l->kind == L_BIG)
			off += OFF_RUN;
		if (size > l->cap || hd.check != mpk__hdr_sum(h->key, a, hd.size, hdr_off(hd.size, off))) {
			/* Sitting in a thread's cache: freed already. */
			if (hd.size == mpk__hdr_mark(h->tok, a))
				return MPK_MISUSE_DOUBLE_FREE;
			return l->kind == L_SLAB && a - l->start != HDR ? MPK_MISUSE_WILD
									: MPK_MISUSE_CORRUPT;
		}
		l->size = size;
	} else if (l->kind != L_BIG) {
		l->size = l->cap;
	}
	return 0;
}

/* locate() under the right arena's lock, which stays held (in *ap). */
int mpk__heap_locate(struct heap *h, uintptr_t a, struct loc *l, struct arena **ap)
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

/* Threads holding each arena number (the same in every heap), counted
 * at their first pick() and until their exit (mpk__arena_leave()). */
static unsigned arena_users[ARENAS_MAX];
_Static_assert((ARENAS_MAX & (ARENAS_MAX - 1)) == 0, "a mask bounds the numbers");
/* 1 + the thread's arena number, 0 before its first pick(); with
 * ARENA_COUNTED while arena_users counts it.  A thread that left keeps
 * its arena uncounted: a later key's destructor may still allocate. */
#define ARENA_COUNTED 0x80000000u
static __thread unsigned arena_mine __attribute__((tls_model("initial-exec")));

/* The calling thread's arena: at its first call, the one the fewest live
 * threads hold (the lowest of those), so a thread takes the arena of one
 * that exited, with its slabs and its chunk, rather than the next one
 * round robin (churn's waves of 4 threads went through all 8 arenas of
 * an 8-CPU machine, each keeping its slabs and chunk resident).  The
 * count and its increment race; the worst is two threads on one arena.
 * Unsealed: rewritten, it sends threads to other arenas, as any balance
 * would; it names no block, and the number is masked to the heap's. */
static struct arena *pick(struct heap *h)
{
	if (!arena_mine) {
		unsigned best = 0;
		for (unsigned i = 1; i < mpk__narenas_default; i++)
			if (__atomic_load_n(&arena_users[i], __ATOMIC_RELAXED) <
			    __atomic_load_n(&arena_users[best], __ATOMIC_RELAXED))
				best = i;
		__atomic_add_fetch(&arena_users[best], 1, __ATOMIC_RELAXED);
		arena_mine = (best + 1) | ARENA_COUNTED;
	}
	return &h->arenas[((arena_mine & ~ARENA_COUNTED) - 1) & (h->narenas - 1)]; /* a power of two */
}

/* The count arena_mine names, masked as pick() masks it: the word is
 * open memory, and a number rewritten there must not make a thread's exit
 * or a forked child (whose handler runs with the metadata open) write past
 * the array. */
static unsigned *mine_users(void)
{
	return &arena_users[((arena_mine & ~ARENA_COUNTED) - 1) & (ARENAS_MAX - 1)];
}

void mpk__arena_leave(void)
{
	if (arena_mine & ARENA_COUNTED)
		__atomic_sub_fetch(mine_users(), 1, __ATOMIC_RELAXED);
	arena_mine &= ~ARENA_COUNTED;
}

void mpk__arena_forked(void)
{
	/* The child has the forking thread alone. */
	memset(arena_users, 0, sizeof(arena_users));
	if (arena_mine & ARENA_COUNTED)
		*mine_users() = 1;
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
TC_INLINE bool cached_block(const struct heap *h, uintptr_t a)
{
	if ((a & 15) || mpk__chunk_tag(a) != h->uid)
		return false;
	return mpk__hdr_get(a).size == mpk__hdr_mark(h->tok, a);
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

/* What a batch's give backs took from their arena's counts, taken off
 * them once, before the lock goes (they are only stats). */
struct taken {
	size_t blocks, bytes;
};

static inline void taken_off(struct arena *held, struct taken *t)
{
	held->blocks -= t->blocks;
	held->bytes -= t->bytes;
	t->blocks = t->bytes = 0;
}

/* Give back small block a of arena a (locked), if it is one and in use:
 * its slot and bitmap bit, and in *t the counts.  Whether its slab went
 * back as a free run (then c may have gone). */
TC_INLINE bool give_back(struct arena *held, struct chunk *c, uintptr_t a, struct taken *t)
{
	struct run *r = mpk__run_at(c, a);

	if (!r || r->kind != RUN_SLAB)
		return false;
	uintptr_t rs = run_addr(c, r);
	unsigned idx = (unsigned)(((uint64_t)(a - HDR - rs) * class_inv[r->cls]) >> 32);
	if (idx >= slab_blocks[r->cls] || rs + (uintptr_t)idx * class_size[r->cls] + HDR != a ||
	    ((r->bits[idx / 64] >> (idx % 64)) & 1))
		return false;
	t->blocks++;
	t->bytes += class_size[r->cls] - HDR;
	return slab_free(held, r, idx);
}

/* mpk__map_find() for a run of blocks: last, a chunk found before, if a
 * is in its range (one lookup per chunk, not per block).  The caller
 * keeps last only while the chunk cannot go: its arena's lock held (and
 * dropped when its own give back returned a run, or when it lets the
 * lock go), or a block of it in the caller's hands; then a lookup would
 * find the same chunk (chunks do not overlap), for a forged address as
 * for a block. */
static inline struct chunk *chunk_of(uintptr_t a, const struct chunk *last)
{
	if (last && a - last->base < CHUNK_SIZE)
		return (struct chunk *)last;
	return mpk__map_find(a);
}

/* Chunks of an arena found before by a flush's blocks given back under
 * its lock, by the 1 MiB granule of the block that found each: one
 * lookup per chunk, where a flush's blocks come from many chunks in turn
 * (a tree freed in its own order).  Kept only while they cannot go, as
 * chunk_of()'s: the arena's lock held since, and forgotten when a give
 * back returns its run (a run given back takes at most its own chunk
 * with it: run.c). */
#define SEEN 16
struct seen {
	struct chunk *c[SEEN];
};

/* The kept chunk holding a, or NULL. */
static inline struct chunk *seen_hit(const struct seen *s, uintptr_t a)
{
	struct chunk *c = s->c[(a >> CHUNK_SHIFT) % SEEN];

	return c && a - c->base < CHUNK_SIZE ? c : NULL;
}

/* c holds a; went: a's give back returned its run. */
static inline void seen_after(struct seen *s, uintptr_t a, struct chunk *c, bool kept, bool went)
{
	if (went) {
		/* Kept, it is under a's granule or a neighbour (it spans
		 * two at most); compared, not read: it may be gone. */
		for (uintptr_t g = (a >> CHUNK_SHIFT) - 1; g <= (a >> CHUNK_SHIFT) + 1; g++)
			if (s->c[g % SEEN] == c)
				s->c[g % SEEN] = NULL;
	} else if (!kept && c->magic == CHUNK_MAGIC) {
		s->c[(a >> CHUNK_SHIFT) % SEEN] = c;
	}
}

/* Take ar's remote list (its lock held, the domain readable) and give
 * its blocks back; a link that fails the checks ends it. */
void mpk__remote_drain(struct arena *ar)
{
	struct heap *h = ar->heap;
	uintptr_t a = __atomic_exchange_n(&ar->remote, 0, __ATOMIC_ACQUIRE);
	struct chunk *last = NULL;
	struct taken t = { 0, 0 };

	while (a) {
		struct chunk *c = chunk_of(a, last);
		if (!c || c->arena != ar || !cached_block(h, a))
			break;
		uintptr_t next = link_get(h, a);
		last = !give_back(ar, c, a, &t) && c->magic == CHUNK_MAGIC ? c : NULL;
		a = next;
	}
	taken_off(ar, &t);
}

static struct arena *pick(struct heap *h);

/* A class's first refill in a cache takes a few blocks, each next one
 * twice the last, up to half the cache: a thread that makes a few blocks
 * of a class and exits takes (and gives back at exit) a few, not 64. */
#define TC_FILL_FIRST 4

int mpk__tc_refill(struct tcache *tc, unsigned cls)
{
	unsigned want = tc->fill[cls] ? tc->fill[cls] * 2u : TC_FILL_FIRST, got = 0;
	struct arena *a = tc->arena;

	if (want > mpk__tc_lim[cls] / 2u)
		want = mpk__tc_lim[cls] / 2u;
	tc->fill[cls] = (uint8_t)want;

	/* The blocks' headers are written below (malloc could not take
	 * them without rights anyway: it goes the slow way). */
	if (mpk__rights_now(tc->domain) != MPK_RW)
		return -1;
	if (!a)
		a = tc->arena = pick(tc->heap);
	pthread_mutex_lock(&a->lock);
	/* Blocks other threads gave back come first (their links are in
	 * the blocks). */
	if (__atomic_load_n(&a->remote, __ATOMIC_RELAXED))
		mpk__remote_drain(a);
	uintptr_t fresh[TC_MAX / 2];
	got = slab_take(a, cls, fresh, want);
	a->blocks += got;
	a->bytes += got * (size_t)(class_size[cls] - HDR);
	pthread_mutex_unlock(&a->lock);
	/* Lowest address on top: handed out first.  Slots are written from
	 * the bottom up, none past the batch (cache.c's wipe() relies on the
	 * written ones being a prefix), and the blocks come from here, not
	 * back from the cache's open memory. */
	for (unsigned i = 0; i < got; i++) {
		uintptr_t b = fresh[got - 1 - i] + HDR;
		tc->slot[cls][i] = b ^ tc->mkey;
		mpk__hdr_set(b, mpk__hdr_mark(tc->tok, b), 0);
	}
	tc->n[cls] = (uint8_t)got;
	tc_top(tc, cls);
	return got ? 0 : -1;
}

/* The k oldest blocks of a class go back: those of the thread's own
 * arena under its lock, those of other arenas onto their remote lists
 * (a chain per run of blocks of one arena), so a thread freeing another
 * thread's blocks does not wait for that thread's lock.  Without rights
 * to write the blocks, every block goes back under its arena's lock. */
/* A cached page-run block a goes back to its arena (locked): whether it
 * did (then c may have gone). */
static bool give_back_run(struct arena *held, struct chunk *c, uintptr_t a)
{
	struct run *r = mpk__run_at(c, a);

	if (!r || r->kind != RUN_LARGE || a - run_addr(c, r) != r->off)
		return false;
	held->blocks--;
	held->bytes -= ((size_t)r->pages << mpk__heap_page_shift) - r->off;
	r->clean = 0;
	mpk__run_free(held, c, r);
	return true;
}

void mpk__tc_flush(struct tcache *tc, unsigned cls, unsigned k)
{
	struct heap *h = tc->heap;
	struct arena *held = NULL, *own = tc->arena, *far = NULL;
	bool links = mpk__rights_now(tc->domain) == MPK_RW;
	uintptr_t first = 0, last = 0;
	/* Chunks looked up before: seen, held's; farc, a chunk of far's
	 * holding a block of the chain not pushed yet, which no one else
	 * can give back, so the chunk stays (chunk_of()). */
	struct chunk *farc = NULL;
	struct seen seen;
	struct taken t = { 0, 0 };

	if (!own)
		own = tc->arena = pick(h);
	memset(&seen, 0, sizeof(seen));
	for (unsigned i = 0; i < k; i++) {
		uintptr_t a = tc->slot[cls][i] ^ tc->mkey;
		/* A chunk kept was checked as the ones below when it was
		 * found, under held's lock since: the same heap, and the same
		 * arena, given back to the same way. */
		struct chunk *c = held ? seen_hit(&seen, a) : NULL;
		bool kept = c;
		if (!kept) {
			c = farc && a - farc->base < CHUNK_SIZE ? farc : mpk__map_find(a);
			if (!c || c->heap != h)
				continue; /* an overwritten entry: leave it be */
			if (c->arena != own && links && cls < NCLASSES) {
				if (!cached_block(h, a))
					continue;
				farc = c;
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
				if (held) {
					taken_off(held, &t);
					pthread_mutex_unlock(&held->lock);
				}
				pthread_mutex_lock(&(held = c->arena)->lock);
				memset(&seen, 0, sizeof(seen));
			}
		}
		bool went = cls < NCLASSES ? give_back(held, c, a, &t) : give_back_run(held, c, a);
		/* Kept for the next blocks only as held's live chunk, checked
		 * under its lock (as mpk__heap_locate() does). */
		seen_after(&seen, a, c, kept, went);
	}
	if (held) {
		taken_off(held, &t);
		pthread_mutex_unlock(&held->lock);
	}
	if (far)
		remote_push(far, first, last);
	unsigned n = tc->n[cls];
	memmove(tc->slot[cls], tc->slot[cls] + k, (n - k) * sizeof(uintptr_t));
	tc->n[cls] = (uint8_t)(n - k);
	tc_top(tc, cls);
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
		m->heap = mpk__vault(h) ? NULL : (mpk_heap *)h;
		m->domain = h->domain;
		m->domain_name = mpk_domain_name(h->domain);
	}
	if (kind == MPK_MISUSE_FOREIGN || kind == MPK_MISUSE_WILD) {
		struct heap *o = mpk__heap_owner(p);
		if (o && o != h && o->magic == HEAP_MAGIC) {
			m->kind = MPK_MISUSE_FOREIGN;
			m->owner = mpk__vault(o) ? NULL : (mpk_heap *)o;
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
	size_t page = mpk__page(), hdr = mpk__heap_headers(h) ? HDR : 0;
	uintptr_t p = 0, start = 0;
	size_t cap = 0;
	uint64_t off = 0; /* beyond p - start, in the header's check */
	/* Known to be zero: a region mapped for this block alone.  Never a
	 * page run, purged or never used: both stay writable while free, so
	 * a write through a dangling pointer, or an overflow from the run
	 * before, may have reached them since (calloc must clear them). */
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
	/* Sealed, a slab block starts its slot (free checks that against the
	 * slab alone): an aligned one takes a page run, whose descriptor
	 * holds its offset. */
	bool slab = need <= SMALL_MAX && (align <= 16 || !mpk__meta_closed());
	bool big = (h->flags & HEAP_GUARDS) || need > LARGE_MAX || force_big;
	struct arena *a = big ? &h->arenas[0] : pick(h);
	/* Writing the header needs the domain; do it before the lock. */
	if (hdr && mpk__heap_reach(h->domain, MPK_RW, &s))
		return NULL;
	pthread_mutex_lock(&a->lock);
	if (mpk__vault_ready(h)) {
		pthread_mutex_unlock(&a->lock);
		return NULL;
	}
	if (big) {
		struct big b;
		if ((p = (uintptr_t)mpk__big_alloc(a, size, align, &b))) {
			start = b.region;
			cap = b.region + b.reglen - p;
			fresh = !b.reused;
			off = OFF_RUN;
		}
	} else if (slab) {
		unsigned cls = mpk__class_of16[(need + 15) / 16];
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
		if (zero && !fresh && !mpk__vault(h))
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
	mpk__block_wipe(ar->heap, a, l->cap);
	if (mpk__heap_headers(ar->heap))
		mpk__san_free(a, l->cap);
	switch (l->kind) {
	case L_SLAB:
		(void)slab_free(ar, l->r, l->idx);
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
int mpk__block_rights(const struct heap *h, bool write)
{
	if (mpk__vault(h))
		return write ? MPK_RW : MPK_NONE;
	if (h->flags & HEAP_GUARDS)
		return MPK_NONE;
	return write ? MPK_RW : MPK_READ;
}

int mpk__heap_release(struct heap *h, void *p, struct mpk_misuse *m, const char *call)
{
	int want = mpk__block_rights(h, mpk__vault(h) || (h->flags & MPK_HEAP_WIPE));
	mpk_scope s = { NULL, -1 };
	struct loc l;

	if (want && mpk__heap_reach(h->domain, want, &s))
		return -1;
	struct arena *a;
	int kind = mpk__heap_locate(h, (uintptr_t)p, &l, &a);
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

	int kind = mpk__heap_locate(h, (uintptr_t)p, &l, &a);
	pthread_mutex_unlock(&a->lock);
	return !kind;
}

size_t mpk__slab_slot(struct chunk *c, uintptr_t a, struct run **rp, unsigned *idx)
{
	struct run *r = mpk__run_at(c, a);

	if (!r || r->kind != RUN_SLAB)
		return 0;
	uintptr_t rs = run_addr(c, r);
	unsigned i = (unsigned)(((uint64_t)(a - rs) * class_inv[r->cls]) >> 32);
	if (i >= slab_blocks[r->cls] || rs + (uintptr_t)i * class_size[r->cls] != a)
		return 0;
	*rp = r;
	*idx = i;
	return class_size[r->cls];
}

size_t mpk__vault_listed(struct arena *a)
{
	size_t n = 0;

	for (struct chunk *c = a->chunks; c; c = c->next)
		for (unsigned pg = 0; pg < c->npages; pg += c->runs[pg].pages ? c->runs[pg].pages : 1) {
			struct run *r = &c->runs[pg];
			if (c->owner[pg] != pg || r->kind != RUN_SLAB)
				continue;
			n += slab_blocks[r->cls] - r->nfree;
			for (unsigned w = 0; w < SLAB_BLOCKS_MAX / 64; w++)
				n -= (size_t)__builtin_popcountll(__atomic_load_n(&r->live[w], __ATOMIC_RELAXED));
		}
	return n;
}

/* realloc: in place when the block is big enough and not twice too big
 * (guarded blocks always move, to stay flush against their guard). */
void *mpk__heap_realloc_in(struct heap *h, void *p, size_t size, struct mpk_misuse *m,
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
	int kind = mpk__heap_locate(h, (uintptr_t)p, &l, &a);
	/* In place: growing within the block, or shrinking by less than half. */
	if (!kind && size <= l.cap && (size >= l.cap / 2 || size >= l.size) &&
	    !(h->flags & HEAP_GUARDS)) {
		if (l.kind == L_BIG && !mpk__heap_headers(h)) { /* else the header has it */
			pthread_mutex_lock(&mpk__meta_lock);
			mpk__big_find((uintptr_t)p)->size = size;
			pthread_mutex_unlock(&mpk__meta_lock);
		}
		if (mpk__heap_headers(h)) {
			uint64_t off = (uintptr_t)p - l.start;
			if (l.kind == L_LARGE)
				off = run_off(off, l.r->pages);
			else if (l.kind == L_BIG)
				off += OFF_RUN;
			hdr_put(h, (uintptr_t)p, size, off);
		}
		q = p;
	} else if (!kind && size > l.cap && mpk__heap_headers(h)) {
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
					 mpk__heap_headers(h) && size >= REALLOC_BIG && size > l.size))) {
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

