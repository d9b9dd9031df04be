/* SPDX-License-Identifier: MIT */
/*
 * The heap layer's internals, shared by src/heap/.  The layer builds on
 * the public header and the core's services (core.h) alone.  Not installed.
 *
 * A heap hands out blocks from chunks: 1 MiB regions of its domain, carved
 * into page runs.  A run is free, a slab of blocks of one size class (up
 * to 32 KiB), or one large block.  Blocks bigger than 128 KiB, and every
 * block of a guarded heap, get their own region ("big" blocks).  All bookkeeping (heap,
 * chunk and run descriptors, the address map, the big-block table) lives in
 * the metadata area, away from the blocks and closed between calls on hw.
 * A heap has a few arenas, each with its own lock, chunks and size-class
 * bins; threads spread over them, and a block goes back to its chunk's.
 * Blocks of ordinary heaps start with a 16-byte header holding the requested
 * size and a keyed checksum, so an overflow into the next block's header is
 * caught when that block is freed.
 */
#ifndef MPK_HEAP_H
#define MPK_HEAP_H

#include <errno.h>
#include <pthread.h>

#include "../core/core.h"
#include "san.h"

#define CHUNK_SHIFT 20
#define CHUNK_SIZE ((size_t)1 << CHUNK_SHIFT)
#define CHUNK_PAGES_MAX 256       /* 4 KiB pages; fewer with bigger ones */
#define LARGE_MAX ((size_t)128 << 10) /* bigger blocks get their own region */
#define HDR 16                    /* block header of ordinary heaps */
#define NCLASSES 53
#define NLCLASSES 12              /* page runs the thread caches take: 9 to 20 pages */
#define NTC (NCLASSES + NLCLASSES)
#define SMALL_MAX 32768           /* the largest slab class */
#define SLAB_BLOCKS_MAX 256
#define NBUCKETS 9                /* free runs by log2 of their pages */
#define ALIGN_MAX ((size_t)2 << 20)

#define HEAP_MAGIC 0x6d706b68u  /* "mpkh" */
#define CHUNK_MAGIC 0x6d706b63u /* "mpkc" */

/* Heap flags beyond the public MPK_HEAP_*. */
#define HEAP_SECRET (1u << 16) /* a vault: locked, wiped, no headers */
#define HEAP_GUARDS (MPK_HEAP_GUARDED | MPK_HEAP_GUARDED_BELOW)

enum { RUN_NONE, RUN_FREE, RUN_SLAB, RUN_LARGE };

struct run {
	struct run *prev, *next; /* bin's partial slabs, or a free-run bucket */
	struct chunk *chunk;
	uint16_t page, pages;    /* first page in the chunk, length */
	uint8_t kind, cls;
	uint8_t clean;           /* free: nothing to purge (untouched since mapped,
				  * or purged); not known zero, see heap_alloc() */
	uint8_t spare;           /* empty slab kept in its bin */
	uint16_t nfree;          /* slab: free blocks */
	union {
		uint32_t off;    /* large: user pointer - run start */
		uint32_t freed;  /* free and dirty: when (ms, for the decay) */
	};
	uint64_t bits[SLAB_BLOCKS_MAX / 64]; /* slab: 1 = block free */
	uint64_t live[SLAB_BLOCKS_MAX / 64]; /* vault slab: 1 = the user's (atomic, vlist.c) */
};

struct chunk {
	uint32_t magic;
	uint16_t npages, nfree;
	uint16_t spare_pages;                /* in empty slabs kept by bins */
	uint16_t live;                       /* pages with the domain's protection
					      * (a vault's grows: run.c) */
	bool secret;                         /* memfd_secret: charged whole while mapped */
	uintptr_t base;
	struct heap *heap;
	struct arena *arena;
	struct chunk *prev, *next;           /* the arena's chunks */
	uint16_t owner[CHUNK_PAGES_MAX];     /* page -> first page of its run */
	struct run runs[CHUNK_PAGES_MAX];    /* valid at a run's first page */
};

struct bin {
	struct run *partial; /* slabs with free blocks (not empty spares) */
	struct run *spare;   /* one empty slab kept, so alloc/free pairs are cheap
			      * (in a vault, taking a slab is an mlock()) */
};

/* Threads spread over a heap's arenas, so they do not all wait for one
 * lock (each takes the one the fewest live threads hold, at its first
 * call: pick() in heap.c); a block goes back to the arena of its chunk. */
struct arena {
	/* Small blocks of this arena that threads of other arenas gave back
	 * from their caches, without its lock: a stack linked through the
	 * blocks (see heap.c), taken whole by the next refill here.  Atomic;
	 * a line of its own, as other threads write it. */
	uintptr_t remote __attribute__((aligned(64)));
	pthread_mutex_t lock __attribute__((aligned(64))); /* everything below */
	struct heap *heap;
	struct chunk *chunks;
	int empty_chunks;           /* idle chunks kept: at most one */
	struct bin bins[NCLASSES];
	struct run *free_runs[NBUCKETS];
	size_t dirty_pages;         /* in free runs, not yet purged */
	uint32_t decay_at;          /* ms: the oldest dirty run's decay is due */
	size_t blocks, bytes;       /* live blocks, their usable bytes */
	size_t mapped;              /* domain memory: chunks and big blocks */
	/* Arena 0: regions of freed big blocks kept for the next ones
	 * (ordinary heaps), oldest first; reused as they are or mremapped. */
	struct { uintptr_t region; size_t len; } cache[4];
	unsigned ncache;
} __attribute__((aligned(64))); /* arenas share no line */

#define ARENAS_MAX 8

struct heap {
	uint32_t magic;
	unsigned flags;
	struct mpk_domain *domain;
	uint64_t key;               /* header checksums */
	uint64_t ckey;              /* ... of blocks in a thread cache */
	uint64_t tok;               /* their mark (mpk__hdr_mark()) */
	uint32_t uid;               /* never 0, never reused: tags its chunks */
	size_t meta_opens;          /* atomic: closed metadata opened, for stats */
	size_t mapped, mapped_peak; /* atomic: all arenas' mapped, its most (stats) */
	struct heap *prev, *next;   /* the registry; under heaps lock */
	unsigned lock_gen;          /* vault: mpk__fork_gen its runs are locked in */
	bool unmade;                /* vault: its first secret failed, it goes */
	bool kexcl;      /* MPK_DOMAIN_SECRETMEM: shared pages, which a purge does not zero */
	unsigned narenas;           /* big blocks all go to arena 0 */
	struct arena arenas[ARENAS_MAX];
};

/* The questions the heap layer asks about a heap's kind (the vault's
 * policy behind them is in vault.c). */
static inline bool mpk__vault(const struct heap *h)
{
	return h->flags & HEAP_SECRET;
}

/* Whether h's blocks carry headers (neither a vault's nor guarded). */
static inline bool mpk__heap_headers(const struct heap *h)
{
	return !(h->flags & (HEAP_SECRET | HEAP_GUARDS));
}

/* a->mapped grows by add and shrinks by sub (arena lock held); the heap's
 * total and its peak follow, for mpk_heap_stats_get(). */
static inline void mpk__arena_mapped(struct arena *a, size_t add, size_t sub)
{
	struct heap *h = a->heap;

	a->mapped += add - sub;
	size_t now = __atomic_add_fetch(&h->mapped, add - sub, __ATOMIC_RELAXED);
	size_t peak = __atomic_load_n(&h->mapped_peak, __ATOMIC_RELAXED);
	while (now > peak && !__atomic_compare_exchange_n(&h->mapped_peak, &peak, now, true, __ATOMIC_RELAXED,
							  __ATOMIC_RELAXED))
		;
}

/* A block with its own region (big, or guarded).  In the global table,
 * keyed by user pointer; a freed entry stays as a tombstone naming p. */
enum { BIG_EMPTY, BIG_LIVE, BIG_FREED };
struct big {
	uintptr_t p;
	struct heap *heap;
	uintptr_t map, region; /* reservation (guards included), the region */
	size_t maplen, reglen;
	size_t size;           /* requested */
	uint32_t state;
	bool reused;           /* its region was kept from a freed block: not zero */
};

/* ---- block headers (ordinary heaps) ---- */

struct hdr {
	uint64_t size;  /* the size word (below); mpk__hdr_mark() while cached */
	uint64_t check; /* mpk__hdr_sum() over it; ^ the heap's ckey while cached */
};

/* A live block's size word: the requested size, and above it the cache
 * class of that size plus one (0: none, tc_class()).  free's fast path
 * takes the class from the word it loads anyway: a table lookup there lay
 * between the header's load and the cache count's address, a chain from
 * each free to the next malloc of the class (a malloc+free loop ran 8%
 * faster without it).  The check covers the whole word: the class is no
 * easier to rewrite than the size. */
#define HDR_CLS_SHIFT 56
#define HDR_SIZE_MASK ((1ull << HDR_CLS_SHIFT) - 1)
static inline uint64_t mpk__hdr_word(uint64_t size, int64_t cls)
{
	return size | (uint64_t)(cls + 1) << HDR_CLS_SHIFT;
}

/* The cache class a size word names: NTC or more for none (0 there, a
 * mark, garbage). */
static inline uint64_t mpk__hdr_cls(uint64_t w)
{
	return (w >> HDR_CLS_SHIFT) - 1;
}

/* The size word of every block in a thread cache is a mark, the block's
 * address XOR the heap's tok with HDR_CACHED set (no size has it), which
 * a free writes and a refill writes into fresh blocks: malloc takes no
 * block without it.  A block freed twice with its live header written
 * back in between sits in a cache twice; its second taking finds the
 * header the first one wrote, and the class's cache is dropped rather
 * than hand the block to two owners.  A write that sets the top bit
 * again does not make the mark without tok (one compare on malloc's fast
 * path, no multiply); a reader of a cached header learns tok, which
 * makes marks and nothing else. */
#define HDR_CACHED (1ull << 63)
static inline uint64_t mpk__hdr_mark(uint64_t tok, uintptr_t p)
{
	return (p ^ tok) | HDR_CACHED;
}

/* The header of block p: the heap alone reads and writes it (closed to
 * ASan and valgrind). */
SAN_NO_ASAN static inline struct hdr mpk__hdr_get_vg(uintptr_t p, bool vg)
{
	struct hdr h;

	mpk__san_hdr_open_vg(p - HDR, HDR, vg);
	h = *(const struct hdr *)(p - HDR);
	mpk__san_hdr_close_vg(p - HDR, HDR, vg);
	return h;
}

SAN_NO_ASAN static inline void mpk__hdr_set_vg(uintptr_t p, uint64_t size, uint64_t check, bool vg)
{
	uint64_t *hd = (uint64_t *)p; /* (indexed from p: one register on the fast paths) */

	mpk__san_hdr_open_vg(p - HDR, HDR, vg);
	hd[-2] = size;
	hd[-1] = check;
	mpk__san_hdr_close_vg(p - HDR, HDR, vg);
}

static inline struct hdr mpk__hdr_get(uintptr_t p)
{
	return mpk__hdr_get_vg(p, mpk__san_vg);
}

static inline void mpk__hdr_set(uintptr_t p, uint64_t size, uint64_t check)
{
	mpk__hdr_set_vg(p, size, check, mpk__san_vg);
}

static inline uint64_t mpk__mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Keyed per heap over the block's address, size and offset in its slot:
 * an overflow that rewrites it, or a pointer into another heap, does not
 * match without the key.  A sum, no final mix: it runs twice per
 * malloc+free pair, and against accidents it is as good as one (a change
 * of any one field always shows, each term being a bijection of its
 * field; a match by chance needs 64 bits to agree).  Neither is a MAC
 * against an attacker who reads headers: the key is open memory when the
 * metadata is (open mode's thread caches hold it), and sealed the
 * metadata decides (locate() in heap.c: slot, run and bitmap, no cache),
 * never a header.  The size is multiplied on its own: added plainly, a
 * size rewritten by the run-length difference would cancel the offset
 * and pass a run off as another length without the key. */
static inline uint64_t mpk__hdr_sum(uint64_t key, uintptr_t p, size_t size, size_t off)
{
	return (key ^ p) + size * 0x61c88647u + off; /* odd (a bijection), below 2^31 (an immediate) */
}

/* ---- meta.c: the metadata area and the global heap lock ---- */

/*
 * Lock order (a thread holding one takes only later ones; the fork
 * handlers take them all in this order, see fork.c):
 *   mpk__vault_lock -> mpk__heaps_lock -> arena locks (registry order)
 *   -> mpk__meta_lock -> the core's mpk_g.lock.
 * Heap calls take core locks inside their own (mpk_enter, mpk__alloc_owned,
 * mpk_domain_create); the core never calls into the heap layer with its
 * lock held.  The misuse handler's lock is a leaf: a thread holding it
 * takes no other (its setter holds the meta lock to write the seal).
 * In writable data, unsealed: a lock word rewritten lets a second call in
 * beside the first (a race on sealed state the attacker must win while a
 * call is under way) or stops calls; it never names a block.
 */
extern pthread_mutex_t mpk__heaps_lock; /* the registry */
extern pthread_mutex_t mpk__meta_lock;  /* area, map, big table */
extern pthread_mutex_t mpk__vault_lock; /* making and finding vaults */
extern pthread_mutex_t mpk__misuse_lock;

/* ---- seal.c: the allocator's globals, sealed in place ---- */

/*
 * What says where the metadata is, kept where a write to libmpkit's .bss
 * cannot reach it: a page of its own (below), read-only (mprotect) while
 * the area is sealed, so a stray or hostile store there faults.  It
 * changes only as the area is made, grows (a range) and goes, a write
 * window of two mprotect() each time (mpk__seal_write()).  The rest of
 * the allocator's state (struct meta_state) sits in the area's first page,
 * sealed with the area.  Open, nothing is sealed and the page stays
 * writable: nothing to check against.
 */
#define META_RANGES 64
struct meta_state;
struct mpk__seal {
	mpk_domain *dom;          /* sealed area: "heap-meta" (atomic); open: NULL */
	struct meta_state *st;    /* the area's first page; NULL: no area */
	struct heap *none;        /* an empty registry, while there is no area */
	int nheaps;               /* heaps and vaults using the area */
	unsigned nranges;         /* atomic: read without the lock */
	bool ro;                  /* sealed now: writes need mpk__seal_write() */
	struct { uintptr_t lo, hi; } range[META_RANGES]; /* the area's regions */
	/* Set once, before the first area (heap.c): a cache class's limit
	 * raised past TC_MAX would spill a push into the next class's
	 * stack, whose malloc would then hand out a smaller block. */
	uint8_t tc_lim[NCLASSES + NLCLASSES];
	/* mpk_misuse_handler_set()'s (misuse.c): a function pointer in
	 * writable data would let a write there choose what a detected
	 * misuse calls, or silence the abort. */
	mpk_misuse_fn misuse_fn;
	void *misuse_arg;
};
#define SEAL_PAGE 4096 /* x86's; the object fills its pages alone */
extern union mpk__seal_page {
	struct mpk__seal s;
	char page[SEAL_PAGE];
} mpk__seal_pg MPK_HIDDEN __attribute__((aligned(SEAL_PAGE)));
#define mpk__meta_dom (mpk__seal_pg.s.dom) /* closed area: its domain */
/* Make [p, p+len) of sealed globals (the page, the tag table) writable
 * (on) or read-only again (off), when the seal is on; nothing when open.
 * Under the meta lock.  0, or -1/errno from mprotect(). */
int mpk__seal_write(void *p, size_t len, bool on);
/* Seal (on) or unseal every sealed global: the page, the tag root and
 * its leaves.  Under the meta lock.  0 or -1/errno. */
int mpk__seal_all(bool on);
/* heap.c's class tables, read-only once made (see there). */
struct mpk__classes {
	size_t page;              /* mpk__page() */
	unsigned page_shift;      /* its log2 */
	unsigned narenas_default; /* the CPUs, a power of two, 2 to 8 */
	unsigned lclass_first;    /* pages of the first page run class */
	int lclass_base;          /* + pages: a run's cache class */
	size_t ltc_max;           /* the longest the caches take, at most LARGE_MAX */
	uint8_t class_of16[SMALL_MAX / 16 + 1]; /* ceil(n / 16) -> class */
	uint8_t slab_pages[NCLASSES];
	uint16_t slab_blocks[NCLASSES];
	uint32_t class_inv[NCLASSES]; /* ceil(2^32 / size): index by multiply */
	uint32_t tc_cap[NTC];         /* usable bytes of a cached block of the class */
	uint64_t tc_off[NTC];         /* its offset in its slot or run, as hdr_off() has it */
};
extern union mpk__classes_page {
	struct mpk__classes c;
	char page[SEAL_PAGE];
} mpk__classes_pg MPK_HIDDEN __attribute__((aligned(SEAL_PAGE)));

/*
 * The allocator's state, at the start of the area (meta.c): sealed with
 * it, and written only with it open.  Nothing here is read without the
 * metadata open.
 */
struct meta_state {
	void *free[11];           /* META_ORDERS: links live in the area too */
	uintptr_t bump, end;
	uint64_t key;             /* per process, for checksums */
	struct heap *heaps;       /* the registry, under mpk__heaps_lock */
	void **map_root;          /* map.c's radix tree */
	struct big *big_tab;      /* big.c's table */
	size_t big_cap, big_used, big_live;
};
static inline struct meta_state *mpk__meta_st(void)
{
	return mpk__seal_pg.s.st;
}
/* The area's ranges: fn(lo, hi, arg) for each; handed to the core's
 * table of layer ranges (mpk__layer_ranges_register()), which the
 * lockdown reads. */
void mpk__meta_ranges_each(void (*fn)(uintptr_t lo, uintptr_t hi, void *arg), void *arg);

/* Open the metadata for this thread (a scope to close), 0 or -1/errno. */
static inline int mpk__meta_open(mpk_scope *s)
{
	mpk_domain *d = __atomic_load_n(&mpk__meta_dom, __ATOMIC_ACQUIRE);

	s->domain = NULL;
	s->saved = -1;
	if (!d)
		return 0; /* open area, or none: nothing to open */
	*s = mpk_enter(d, MPK_RW);
	return s->domain ? 0 : -1;
}

/* Close it again, keeping errno. */
static inline void mpk__meta_close(mpk_scope *s)
{
	if (s->domain) {
		int err = errno;
		(void)!mpk_leave(s); /* failing, it stays open: the caller reports its own error */
		errno = err;
	}
}
/* Set up the area for a new heap (under the lock): 0 or -1/errno. */
int mpk__meta_get(void);
/* A heap is gone (under the lock): the area goes with the last one (*last
 * set: the caller forgets what it kept there, the map and the big-block
 * table); the caller destroys the domain this returns once it has dropped
 * the lock. */
mpk_domain *mpk__meta_put(bool *last);
static inline bool mpk__meta_closed(void)
{
	return __atomic_load_n(&mpk__meta_dom, __ATOMIC_ACQUIRE) != NULL;
}
/* Zeroed, page-granular metadata; callers hold the lock and have it open. */
void *mpk__meta_alloc(size_t len);
void mpk__meta_free(void *p, size_t len);
/* Whether p lies in the area (no lock, no access): in the seal page's
 * ranges, and sealed, in the core's record of the heap-meta domain's
 * regions too. */
bool mpk__meta_contains(const void *p);
/* Whether [p, p+len) overlaps the area, as the seal page's ranges say
 * (read-only while sealed: no record an attacker could rewrite). */
bool mpk__meta_overlaps(const void *p, size_t len);
struct heap **mpk__meta_heaps(void);  /* registry head (heaps lock) */
uint64_t mpk__meta_key(void);         /* per process, for checksums */
/* The big-block table (under the lock). */
struct big *mpk__big_find(uintptr_t p);
struct big *mpk__big_insert(uintptr_t p); /* NULL: ENOMEM */
void mpk__big_remove(struct big *b);      /* leaves a tombstone */
void mpk__big_reset(void);

/* ---- map.c: address -> chunk, lock-free lookup ---- */

/* Chunks are CHUNK_SIZE-aligned.  Besides the map (in the metadata, so
 * closed on hw), a table readable by all gives each 1 MiB granule the uid
 * of the heap whose chunk it is, or 0: the fast paths, which do not open
 * the metadata, read it before they touch a block's header.  Writers hold
 * the meta lock; leaves are never freed. */
#define TAG_L2 14
/* Sealed (seal.c): page-aligned, read-only while the area is sealed, and
 * so are its leaves. */
extern uint32_t *mpk__tag_root[1u << (48 - CHUNK_SHIFT - TAG_L2)];
static inline uint32_t mpk__chunk_tag(uintptr_t a)
{
	if (a >> 48)
		return 0;
	uint32_t *leaf = __atomic_load_n(&mpk__tag_root[a >> (CHUNK_SHIFT + TAG_L2)],
					 __ATOMIC_ACQUIRE);
	return leaf ? __atomic_load_n(&leaf[(a >> CHUNK_SHIFT) & ((1u << TAG_L2) - 1)],
				      __ATOMIC_RELAXED)
		    : 0;
}

int mpk__map_add(struct chunk *c); /* under the meta lock */
void mpk__map_del(struct chunk *c);
struct chunk *mpk__map_find(uintptr_t a);
void mpk__map_reset(void);

/* ---- run.c: chunks and page runs (under the arena lock) ---- */

/* The page size and its log2, known once a heap exists (heap.c's
 * sealed class tables). */
#define mpk__heap_page (mpk__classes_pg.c.page)
#define mpk__heap_page_shift (mpk__classes_pg.c.page_shift)
static inline size_t mpk__page(void)
{
	return mpk__heap_page;
}
struct run *mpk__run_alloc(struct arena *a, size_t pages, struct chunk **cp);
void mpk__run_free(struct arena *a, struct chunk *c, struct run *r);
/* Moves on whenever a run is given back or a chunk goes (and in a forked
 * child): an address may then name other metadata, so whatever a thread
 * remembered about a block (vault.c) is stale.  Unsealed: it guards a
 * thread-local hint (as writable) that picks a secret's domain, never a
 * block malloc returns or free releases. */
extern uint64_t mpk__runs_epoch;
void mpk__runs_moved(void);
/* Grow r to pages in place, from the free run after it: whether it did. */
bool mpk__run_grow(struct arena *a, struct chunk *c, struct run *r, size_t pages);
void mpk__chunks_release(struct arena *a); /* all of them, on destroy */
/* Free runs: into and out of their arena's lists. */
void mpk__free_insert(struct arena *a, struct chunk *c, struct run *r);
void mpk__free_remove(struct arena *a, struct run *r);
/* Nothing in use but empty slabs kept by bins: the chunk could go. */
static inline bool mpk__chunk_idle(const struct chunk *c)
{
	return c->nfree + c->spare_pages == c->npages;
}
static inline uintptr_t run_addr(const struct chunk *c, const struct run *r)
{
	return c->base + ((uintptr_t)r->page << mpk__heap_page_shift);
}
/* The run in use (slab or large) holding address a of c, or NULL if a is
 * in free pages: there the owner table may name an older run. */
static inline struct run *mpk__run_at(struct chunk *c, uintptr_t a)
{
	unsigned pg = (unsigned)((a - c->base) >> mpk__heap_page_shift);
	struct run *r = &c->runs[c->owner[pg]];

	if ((r->kind != RUN_SLAB && r->kind != RUN_LARGE) || pg - r->page >= r->pages)
		return NULL;
	return r;
}

/* ---- vault.c: the vault's run policy (the rest asks, never tests the flag) ---- */

/* What a vault keeps locked with no secret in it: empty slabs in its bins
 * up to VAULT_KEEP in all, none that would hold up a shrink of its chunk,
 * and per thread one emptied run of its list's, in a memfd_secret chunk
 * only in its first VAULT_KEEP bytes, to which its mapping can shrink
 * (vault.c, vlist.c, docs/heaps.md). */
#define VAULT_KEEP ((size_t)64 << 10)
/* Region flags for h's chunks (grows) and big blocks: a vault's are
 * memfd_secret where the kernel has it, live as pages are taken (core.h). */
static inline unsigned mpk__vault_region(const struct heap *h, bool grows)
{
	return mpk__vault(h) ? MPK__REGION_VAULT | (grows ? MPK__REGION_GROWS : 0) : 0;
}
/* A new chunk at base: a vault's live part (*live, else left as it is)
 * and whether it is memfd_secret; 0, or -1/errno. */
int mpk__vault_chunk(struct heap *h, void *base, size_t *live, bool *secret);
/* Unlock a vault's pages (nothing for other heaps). */
void mpk__vault_unlock(struct heap *h, void *addr, size_t len);
/* Run r of c was taken: a vault's is made live and locked; if that
 * fails it goes back (-1/errno, r and maybe c gone).  0 otherwise. */
int mpk__vault_run_take(struct arena *a, struct chunk *c, struct run *r);
/* Run r goes back: a vault's is unlocked and purged (wiped already). */
void mpk__vault_run_give(struct arena *a, struct chunk *c, struct run *r);
/* A run of c went (c kept, idle or not): a vault chunk's live part shrinks. */
void mpk__vault_trim(struct arena *a, struct chunk *c, bool idle);
/* Whether an emptied slab may stay in its bin as far as the vault goes
 * (idles: keeping it keeps its chunk idle); always for other heaps. */
bool mpk__vault_keeps_spare(struct arena *a, const struct run *r, bool idles);
/* Before handing out a block (arena 0's lock held): a vault's runs are
 * locked again in a forked child.  0, or -1 with the errno of mlock(). */
int mpk__vault_ready(struct heap *h);
/* A freed block's bytes: a vault's wiped for good, MPK_HEAP_WIPE zeroed. */
void mpk__block_wipe(const struct heap *h, uintptr_t a, size_t cap);
/* Lock vault pages in memory: 0, or -1 with the errno of mlock(). */
int mpk__heap_lock_pages(struct heap *h, void *addr, size_t len);

/* ---- big.c: blocks with their own region (under arena 0's lock) ---- */

void *mpk__big_alloc(struct arena *a, size_t size, size_t align, struct big *out);
void mpk__big_unmap(struct heap *h, const struct big *b);
/* A big block was freed (its entry is gone): keep its region or unmap it. */
void mpk__big_free(struct arena *a, const struct big *b);
void mpk__bigs_trim(struct arena *a); /* unmap the kept regions */
/* Grow or shrink big block p (live, ordinary heap) to size with mremap:
 * its new address, or 0 (unchanged). */
uintptr_t mpk__big_resize(struct arena *a, uintptr_t p, size_t size);
void mpk__bigs_release(struct heap *h); /* all of the heap's, on destroy */

/* ---- calls.c: heaps made and destroyed ---- */

struct heap *mpk__heap_new(struct mpk_domain *d, unsigned flags);
/* Free all of h, with the metadata open in s (closed here). */
void mpk__heap_delete(struct heap *h, mpk_scope *s);

/* ---- heap.c: the allocator behind the public calls (calls.c) ---- */

/* The size classes, made once (mpk__heap_classes_init()): small sizes
 * and page runs to their class, the largest size the caches take, and
 * per cache class a cached block's usable bytes and the offset its
 * header's check covers; the arenas an ordinary heap gets; the page size.
 * They live in a page of their own made read-only for good once they are
 * made, in every mode (one mprotect() a process, nothing per call): a
 * write to a slab's length or block count, a class's size or the page
 * shift (libmpkit's .bss, found through its symbol table) would make
 * slabs or blocks overlap.  Not compile-time constants, as the page size
 * is the kernel's answer. */
#define mpk__class_of16 (mpk__classes_pg.c.class_of16)
#define mpk__lclass_base (mpk__classes_pg.c.lclass_base)
#define mpk__ltc_max (mpk__classes_pg.c.ltc_max)
#define mpk__tc_cap (mpk__classes_pg.c.tc_cap)
#define mpk__tc_off (mpk__classes_pg.c.tc_off)
#define mpk__narenas_default (mpk__classes_pg.c.narenas_default)
void mpk__heap_classes_init(void);

#define TC_INLINE static inline __attribute__((always_inline))

/* The cache class of a block of size bytes (with its header), or -1.
 * (long: a table's byte becomes an index with no sign extension.) */
TC_INLINE long tc_class(uint64_t size)
{
	if (likely(size - 1 < SMALL_MAX - HDR))
		return mpk__class_of16[(size + HDR + 15) >> 4];
	if (size - 1 < mpk__ltc_max - HDR)
		return mpk__lclass_base + (long)((size + HDR + mpk__heap_page - 1) >> mpk__heap_page_shift);
	return -1;
}

/* A live header's word for size, whichever way the block came. */
TC_INLINE uint64_t hdr_word(uint64_t size)
{
	return mpk__hdr_word(size, tc_class(size));
}

/* The offset a header's check covers (mpk__hdr_sum()): the block's in its
 * slot or run, less the one its word's class gives a cached block (so 0
 * for those: the fast paths' sums need no table lookup, which lay between
 * a free's header load and its compare). */
TC_INLINE uint64_t hdr_off(uint64_t w, uint64_t off)
{
	uint64_t cls = mpk__hdr_cls(w);

	return off - (cls < NTC ? mpk__tc_off[cls] : 0);
}

/* Where a block is (mpk__heap_locate()). */
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

/* locate() under the right arena's lock, which stays held (in *ap): 0 if
 * a is a live block (and *l says where), else MPK_MISUSE_*. */
int mpk__heap_locate(struct heap *h, uintptr_t a, struct loc *l, struct arena **ap);
/* Take ar's remote list (its lock held, the domain readable) and give
 * its blocks back. */
void mpk__remote_drain(struct arena *ar);
/* The calling thread exits: its arena is one thread less busy, for the
 * next thread to take (cache.c's exit hook; a thread with no cache, of a
 * sealed heap, stays counted: the next threads take other arenas first).
 * The thread keeps using it, uncounted, for what it still allocates. */
void mpk__arena_leave(void);
/* In a forked child: the forking thread alone holds an arena. */
void mpk__arena_forked(void);
/* Rights a call needs to the blocks: headers are read, secrets wiped. */
int mpk__block_rights(const struct heap *h, bool write);
#define REALLOC_BIG ((size_t)16 << 10) /* growing past it: a region of its own */
/* realloc inside h (metadata open): in place when it can; *kindp the
 * misuse found, with *m filled. */
void *mpk__heap_realloc_in(struct heap *h, void *p, size_t size, struct mpk_misuse *m,
			   int *kindp);
/* Whose block is p: a heap, or NULL (metadata open, no lock). */
struct heap *mpk__heap_owner(const void *p);
/* The calls below run with the metadata open and no lock held. */
void *mpk__heap_alloc(struct heap *h, size_t size, size_t align, bool zero);
/* 0 freed, -1 errno, or MPK_MISUSE_* with *m filled (to report once the
 * metadata is closed). */
int mpk__heap_release(struct heap *h, void *p, struct mpk_misuse *m, const char *call);
/* Whether p is a live block of h (no report), for the secret calls. */
bool mpk__heap_live(struct heap *h, const void *p);
/* Vault slabs (vlist.c): the slot of a slab of chunk c starting at a, its
 * run and index, and its bytes; 0 if a starts no slot.  No lock: sound for
 * a block in use, whose run cannot change. */
size_t mpk__slab_slot(struct chunk *c, uintptr_t a, struct run **rp, unsigned *idx);
/* Blocks of vault arena a (locked) in threads' lists: in use for the
 * arena, not live for the user. */
size_t mpk__vault_listed(struct arena *a);
/* Describe misuse of p in a call on h (NULL: a secret call); FOREIGN and
 * WILD are settled by who owns p.  Metadata open, no lock held. */
void mpk__misuse_fill(struct mpk_misuse *m, int kind, const char *call, const void *p,
		      struct heap *h);

/* Make sure the calling thread holds at least want (MPK_READ or MPK_RW)
 * to d, in scope s (no change, no scope, when it does): 0 or -1/errno. */
static inline int mpk__heap_reach(struct mpk_domain *d, int want, mpk_scope *s)
{
	int cur = mpk__rights_now(d); /* lock-free (core.h) */

	s->domain = NULL;
	if (cur == MPK_RW || cur == want)
		return 0;
	*s = mpk_enter(d, want);
	return s->domain ? 0 : -1;
}

/* Leave a scope from mpk__heap_reach(), keeping errno. */
static inline void mpk__heap_leave(mpk_scope *s)
{
	if (s->domain) {
		int err = errno;
		(void)!mpk_leave(s); /* failing, it stays open: the caller reports its own error */
		errno = err;
	}
}

/* ---- cache.c: per-thread caches of small blocks ---- */

/*
 * Each thread keeps, per heap it uses (up to TC_HEAPS) and per size class,
 * a stack of free small blocks of ordinary heaps, filled from and emptied
 * into its arena in batches under the arena's lock, with the metadata open
 * (and a few page-run blocks per length up to 20 pages, taken one at a time);
 * between batches malloc and free touch only the cache and the block's
 * header, never the metadata.  The cache is in open memory (a mapping per
 * thread), so its entries are mangled with a per-cache key, as glibc's
 * safe-linking does with tcache links, and a cached block's header check
 * is flipped with the heap's ckey (a second free of it is a double free).
 * All of that holds against a blind attacker only, so sealed heaps have no
 * cache (calls.c's cacheable()); vaults keep their lists here as hints,
 * checked against the slabs (vlist.c).
 */
#define TC_HEAPS 4
/* Entries per class: up to 128 for the smallest classes (16 KiB a class,
 * see heap.c).  A refill or flush moves half, and it is what opens sealed
 * metadata: python3 went from 0.080 to 0.021 opens per call with 32. */
#define TC_MAX 128
struct tcache {
	struct heap *heap;          /* NULL: unused */
	uint32_t uid;               /* of the heap, checked on attach */
	uint64_t epoch;             /* mpk__soft_gepoch when last checked (core.h) */
	uint64_t key, ckey, tok, mkey; /* the heap's keys; mkey mangles slot[] */
	struct mpk_domain *domain;
	uint64_t rw;                /* keyless domain: the thread's soft epoch when it last
				     * held RW, taken after epoch; keyed: TC_RW_KEYED | key;
				     * TC_RW_NONE: neither (calls.c's tc_rw()) */
	/* The fast paths' snapshot, compared with the two epochs' sum now
	 * (calls.c's tc_current()): epoch + rw for a keyless domain held
	 * RW, that sum | TC_RW_KEYED (which no sum has) for a keyed one,
	 * else TC_SNAP_NONE.  fsnap, free's: the same, or TC_SNAP_NONE for
	 * a wiping heap (its frees clear the block, the slow way). */
	uint64_t snap, fsnap;
	uintptr_t chunk;            /* the number of a chunk of the heap's, its tag checked;
				     * TC_CHUNK_NONE none */
	unsigned gen;               /* vault: mpk__fork_gen its listed blocks are locked in */
	bool wipe;                  /* MPK_HEAP_WIPE: free zeroes the block */
	struct arena *arena;        /* refills come from there */
	/* Vault: the one run emptied of secrets whose blocks the list keeps
	 * (vlist.c): its start and end, its class. */
	uintptr_t vl_keep, vl_keep_end;
	unsigned vl_keep_cls;
	uint8_t n[NTC];                /* small classes, then page runs */
	uint8_t fill[NTC];             /* the last refill's batch: the next doubles it */
	/* The top of each stack, slot[c][n[c] - 1] while n[c] > 0 in ordinary
	 * heaps: malloc's fast path loads it by the class alone, without
	 * waiting for the count (that the last free wrote) or the row's
	 * address.  Kept by every change to a class's stack (tc_top()).
	 * Before slot[]: the first row's word before it is one of these. */
	uintptr_t top[NTC];
	/* User pointers ^ mkey, the stack's bottom first. */
	uintptr_t slot[NTC][TC_MAX];
};
#define TC_RW_KEYED (1ull << 63) /* (no soft epoch has either bit) */
#define TC_RW_NONE (1ull << 62)
#define TC_SNAP_NONE (TC_RW_KEYED | TC_RW_NONE)
#define TC_CHUNK_NONE UINTPTR_MAX /* (no address's: they have 48 bits) */
/* After a change to class c's stack other than the fast paths' own. */
static inline void tc_top(struct tcache *tc, unsigned c)
{
	if (tc->n[c])
		tc->top[c] = tc->slot[c][tc->n[c] - 1];
}
/* A heap goes, or a chunk goes back (a cache's chunk hint is good only
 * until then): caches check their heap again.  The epoch they compare is
 * the core's soft one (core.h), which also moves with every soft base and
 * generation: one load and one compare on the fast paths tell that
 * neither the heap nor a keyless domain's rights moved since the cache
 * was checked.  Unsealed: pinned, it keeps hints of a thread cache, which
 * is itself plain memory an attacker can rewrite; without caches (sealed
 * heaps) nothing that picks a block reads it.  docs/heaps.md. */
static inline void mpk__heap_epoch_bump(void)
{
	__atomic_add_fetch(&mpk__soft_gepoch, 1, __ATOMIC_RELEASE);
}
#define mpk__tc_last (mpk__soft_t.tc_last) /* (core.h: beside the thread's soft epoch) */
#define mpk__tc_lim (mpk__seal_pg.s.tc_lim) /* entries per class (seal.c) */
/* The calling thread's cache for h (metadata open, h checked), made if need
 * be; NULL if none can be had. */
struct tcache *mpk__tc_attach(struct heap *h);
void mpk__tc_init(void); /* with each heap made: the thread-exit key, once */
void mpk__tc_forget(struct heap *h); /* h goes: drop this thread's cache */
/* At the end of a slow call, the metadata closed again: the fast paths
 * learn whether the thread may still write the last cache's domain (its
 * rights snapshot, see tc_rw() in calls.c). */
void mpk__tc_renew(void);
void mpk__tc_flush_all(struct tcache *tc); /* every block back (metadata open) */
/* The calling thread's current cache of d's vault, or NULL (metadata open). */
struct tcache *mpk__tc_vault(struct mpk_domain *d);

/* ---- vlist.c: vaults' per-thread lists of wiped free blocks ---- */

/*
 * A vault's small blocks go, wiped, into the freeing thread's cache entry
 * for the vault (a struct tcache, no headers) and come out of it with no
 * lock.  A listed block is in use for its arena; whether a block is the
 * user's is its run's live bit, set and cleared atomically, so a second
 * free from any thread is named without a lock.  Metadata open throughout.
 */
void *mpk__vl_alloc(struct mpk_domain *d, size_t len); /* NULL: go slow */
/* The slow path handed p out to the user: whether it is the user's (a
 * list planted with it took it first: false, leave it). */
bool mpk__vl_handed(struct mpk_domain *d, const void *p);
/* 0 freed, VL_SLOW not a slab block (the slow free's), -1 errno, or
 * MPK_MISUSE_* with *m filled. */
#define VL_SLOW (-2)
int mpk__vl_free(struct heap *h, void *p, struct mpk_misuse *m);
/* Whether slab block p of h is live: 1, 0, or -1 not a slab block; *w
 * and *mask: where its live bit is (unless -1). */
int mpk__vl_live(struct heap *h, const void *p, const uint64_t **w, uint64_t *mask);
unsigned mpk__vl_flush(struct tcache *tc); /* every listed block back: how many */
/* heap.c: a batch in, the k oldest out (metadata open). */
int mpk__tc_refill(struct tcache *tc, unsigned cls);
void mpk__tc_flush(struct tcache *tc, unsigned cls, unsigned k);

/* ---- fork.c: locks around fork() ---- */

/* Bumped in every forked child: mlock() is not inherited, so a vault whose
 * lock_gen differs has unlocked runs.  Unsealed: rewritten, a child's
 * vault relocks again or not at all, never another block. */
extern unsigned mpk__fork_gen;
void mpk__heap_atfork(void); /* registers the handlers, once */
/* Lock a vault's runs in use and its big blocks again (in a child), under
 * arena 0's lock: 0, or -1 with the errno of mlock().  run.c and big.c. */
int mpk__vault_relock(struct heap *h);
int mpk__bigs_relock(struct heap *h);

/* ---- misuse.c: reports ---- */

void mpk__misuse(struct mpk_misuse *m); /* calls the handler; may not return */
/* A free's result: rc (0, or -1 with errno), or misuse kind rc > 0,
 * reported (metadata closed by now), then -1 with EINVAL. */
int mpk__misuse_rc(int rc, struct mpk_misuse *m);

#endif
