/* SPDX-License-Identifier: MIT */
/*
 * The heap calls: heaps made and destroyed, and mpk_heap_malloc() and the
 * rest, with the thread caches' fast paths inlined into them (a block
 * from the calling thread's cache, or back into it, with no lock and no
 * rights change).  Everything else goes the slow way into heap.c.
 *
 * Each call opens the metadata for the calling thread, and the heap's
 * domain only when it must touch a block and the thread lacks the rights,
 * and puts both back as they were before it returns.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "heap.h"

/* ---- the thread caches' fast paths and batches ---- */

/* Whether the thread may write the cache's domain (headers live there),
 * from the snapshot each slow call renews (heap/cache.c's renew()): for a
 * keyless domain, whether the thread's soft epoch is still the one taken
 * when it held RW; for a keyed one, that key's bits.  Bases and
 * generations that moved since move the global soft epoch, which tc_of()
 * compares: with this, the pair is core.h's snapshot, taken in that
 * order.  A key a domain gains or loses moves it too (soft.c's next_gen()
 * before the key is published, and before an evicted key is reused; the
 * old key's bits meanwhile still say what the thread may touch), so the
 * key noted is the domain's. */
TC_INLINE bool tc_rw(const struct tcache *tc)
{
	uint64_t rw = tc->rw;

	if (likely(rw == __atomic_load_n(&mpk__soft_t.epoch, __ATOMIC_RELAXED)))
		return true;
	return (rw & TC_RW_KEYED) && mpk_arch_key_rights(mpk_arch_reg_read(), (int)(rw & 0xff)) == MPK_RW;
}

/* A cached block for size, or NULL: none cached, not a small size, or
 * the thread may not write the header (the slow path then opens).  vg:
 * make valgrind's client requests (false on the fast paths); rw: the
 * caller knows the thread may write the domain (tc_of_take()). */
TC_INLINE void *tc_malloc(struct tcache *tc, size_t size, bool vg, bool rw)
{
	/* The rights first: RDPKRU takes three registers, fewer live here. */
	if (!rw && unlikely(!tc_rw(tc)))
		return NULL;
	long c = tc_class(size);
	if (unlikely(c < 0))
		return NULL; /* 0 too: the slow path makes it 1 */
	size_t cls = (size_t)c, n = tc->n[cls]; /* (64 bits: indexes, no widening) */
	if (unlikely(!n))
		return NULL;
	uintptr_t p = tc->top[cls] ^ tc->mkey;
	if (unlikely(p & 15) || unlikely(mpk__hdr_get_vg(p, vg).size != mpk__hdr_mark(tc->tok, p))) {
		/* An entry overwritten without the key decodes misaligned
		 * (15 times in 16), a block cached twice was taken already
		 * (its header is live, whatever bit is set in it again):
		 * drop the class's. */
		tc->n[cls] = 0;
		return NULL;
	}
	mpk__san_alloc_vg(p, mpk__tc_cap[cls], vg);
	/* At its class's offset: 0 in the sum (hdr_off()). */
	uint64_t w = mpk__hdr_word(size, (int64_t)cls);
	mpk__hdr_set_vg(p, w, mpk__hdr_sum(tc->key, p, w, 0), vg);
	tc->n[cls] = (uint8_t)(n - 1);
	/* The next top, slot[n - 2]: with n 1 the word before the row (the
	 * struct's), and no top is needed.  No branch. */
	tc->top[cls] = *(const uintptr_t *)((const char *)tc->slot[cls] +
					    ((ptrdiff_t)n - 2) * (ptrdiff_t)sizeof(uintptr_t));
	/* p - HDR was read: p is not NULL (the caller need not test it). */
	if (!p)
		__builtin_unreachable();
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
	uintptr_t n = a >> CHUNK_SHIFT;

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
TC_INLINE bool tc_live(struct tcache *tc, uintptr_t a, struct hdr *hd, size_t *clsp, bool vg,
		       bool rw)
{
	/* The chunk is the header's, the bytes read and written here (a
	 * block's header is in its own chunk, chunks being aligned; NULL's,
	 * at the top of the address space, has no tag). */
	if (unlikely(a & 15) || !tc_chunk_ok(tc, a - HDR) || (!rw && unlikely(!tc_rw(tc))))
		return false;
	*hd = mpk__hdr_get_vg(a, vg);
	uint64_t w = hd->size;
	size_t cls = mpk__hdr_cls(w); /* (heap.h: no table lookup) */
	if (unlikely((cls >= NTC) | (hd->check != mpk__hdr_sum(tc->key, a, w, 0))))
		return false;
	hd->size = w & HDR_SIZE_MASK;
	*clsp = cls;
	return true;
}

/* fast: free's own fast path, whose tc_of() checked the rights and left
 * a wiping heap's blocks to the slow path: no call here, so nothing to
 * save around one. */
TC_INLINE int tc_free(struct tcache *tc, void *ptr, bool vg, bool fast)
{
	uintptr_t a = (uintptr_t)ptr;
	struct hdr hd;
	size_t cls, n; /* (64 bits: indexes, no widening) */

	if (!tc_live(tc, a, &hd, &cls, vg, fast))
		return TC_NOT;
	n = tc->n[cls];
	if (unlikely(n >= mpk__tc_lim[cls]))
		return TC_FULL;
	if (!fast && unlikely(tc->wipe))
		memset((void *)a, 0, mpk__tc_cap[cls]);
	mpk__hdr_set_vg(a, mpk__hdr_mark(tc->tok, a), hd.check ^ tc->ckey, vg);
	mpk__san_free_vg(a, mpk__tc_cap[cls], vg);
	tc->slot[cls][n] = tc->top[cls] = a ^ tc->mkey;
	tc->n[cls] = (uint8_t)(n + 1);
	return TC_DONE;
}

/* The two epochs' sum now: the global one (no heap, chunk, soft base or
 * generation moved) taken first, as renew() took them. */
TC_INLINE uint64_t tc_epochs(void)
{
	uint64_t g = __atomic_load_n(&mpk__soft_gepoch, __ATOMIC_ACQUIRE);

	return g + __atomic_load_n(&mpk__soft_t.epoch, __ATOMIC_RELAXED);
}

/*
 * Whether the cache is current (no heap or chunk went since it was
 * checked: tc->epoch is the global epoch) and the thread may write its
 * domain (tc_rw()), from x, the cache's snapshot (heap.h) XOR the
 * epochs' sum now.  Both epochs only grow, so the sum is the one
 * renew() noted only if neither moved: for a keyless domain held RW, x
 * is 0 (one compare for both questions); for a keyed one, x is
 * TC_RW_KEYED and the key's bits say.  Otherwise the long way: an epoch
 * moved since the last slow call (it renews the snapshot), or the
 * thread held no RW then.  For an x that is not 0.
 */
TC_INLINE bool tc_current(const struct tcache *tc, uint64_t x)
{
	if (x == TC_RW_KEYED)
		return mpk_arch_key_rights(mpk_arch_reg_read(), (int)(tc->rw & 0xff)) == MPK_RW;
	return tc->epoch == __atomic_load_n(&mpk__soft_gepoch, __ATOMIC_ACQUIRE) && tc_rw(tc);
}

/* The calling thread's cache for hp if it is current (the handle was
 * checked when the cache was made, and no heap has gone since) and the
 * thread may write its domain, for free's fast path: not a wiping
 * heap's (its snapshot matches nothing). */
static inline struct tcache *tc_of(const mpk_heap *hp)
{
	struct tcache *tc = mpk__tc_last;

	if (likely(tc && tc->heap == (const struct heap *)hp)) {
		uint64_t x = tc->fsnap ^ tc_epochs();
		if (likely(!x) || (!tc->wipe && tc_current(tc, x)))
			return tc;
	}
	return NULL;
}

/* tc_of() for the calls that take a block from the cache.  Sealed there
 * are no caches: a pointer to one (thread-local, open memory) is an
 * attacker's, whose entries would be what malloc returns.  (free may put
 * a block into it: a leak, the block never handed out again.)  The
 * seal is tested with the snapshot, in the same branch. */
static inline struct tcache *tc_of_take(const mpk_heap *hp)
{
	struct tcache *tc = mpk__tc_last;

	if (likely(tc && tc->heap == (const struct heap *)hp)) {
		uintptr_t sealed = (uintptr_t)__atomic_load_n(&mpk__meta_dom, __ATOMIC_RELAXED);
		uint64_t x = (tc->snap ^ tc_epochs()) | sealed;
		if (likely(!x) || (!sealed && tc_current(tc, x)))
			return tc;
	}
	return NULL;
}

/* Whether h's small blocks go through thread caches: ordinary heaps with
 * the metadata open.  Sealed, every call goes through the arena, whose
 * state (slab bitmaps, run descriptors, the big-block table) is in the
 * metadata and decides alone: a cache, its entries and the headers it
 * trusts would be open memory deciding what malloc returns. */
static inline bool cacheable(const struct heap *h)
{
	return mpk__heap_headers(h) && !mpk__meta_closed();
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

	mpk__heap_classes_init();
	mpk__heap_atfork();
	mpk__tc_init();
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
		h->kexcl = mpk__domain_secretmem(d);
		static uint32_t uids;
		h->key = mpk__mix(mpk__meta_key() ^ (uintptr_t)h);
		h->ckey = mpk__mix(h->key + 1) | 1;
		h->tok = mpk__mix(h->key + 2);
		if (!++uids)
			uids++; /* 0 tags no chunk */
		h->uid = uids; /* under the heaps lock */
		h->lock_gen = __atomic_load_n(&mpk__fork_gen, __ATOMIC_RELAXED);
		/* Vaults stay small (one arena: one set of locked slabs);
		 * guarded blocks all go to arena 0 anyway. */
		h->narenas = mpk__heap_headers(h) ? mpk__narenas_default : 1;
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
	if (h->magic != HEAP_MAGIC || mpk__vault(h)) {
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
	if (!mpk__domain_valid(d) || (flags & ~(HEAP_GUARDS | MPK_HEAP_WIPE)) ||
	    (flags & HEAP_GUARDS) == HEAP_GUARDS) {
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
		unsigned cls = mpk__class_of16[(size + HDR + 15) >> 4];
		if (tc && (tc->n[cls] || !mpk__tc_refill(tc, cls)) && (p = tc_malloc(tc, size, mpk__san_vg, false)) &&
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
	struct tcache *tc = tc_of_take(hp);
	void *p;

	if (likely(tc) && likely(p = tc_malloc(tc, size, false, true)))
		return p;
	return not_tail(alloc_slow(hp, size, false, 0));
}

MPK_EXPORT void *mpk_heap_calloc(mpk_heap *hp, size_t n, size_t size)
{
	struct tcache *tc = tc_of_take(hp);
	size_t total;
	bool over = __builtin_mul_overflow(n, size, &total);
	void *p;

	if (likely(tc && !over) && (p = tc_malloc(tc, total, false, true)))
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
 * cache does not take (and misuse) go through the arena.  A free that
 * succeeds leaves errno as it was (the fast path touches none): the
 * drop-in's free() need not keep it around every call. */
static __attribute__((noinline)) int free_slow(mpk_heap *hp, void *p)
{
	struct mpk_misuse m;
	mpk_scope s;
	int err = errno;
	struct heap *h = begin(hp, &s);
	int rc = -2;

	if (!h)
		return -1;
	if (!p) {
		rc = 0;
	} else if (cacheable(h)) {
		struct tcache *tc = mpk__tc_attach(h);
		int k = tc ? tc_free(tc, p, mpk__san_vg, false) : TC_NOT;
		if (k == TC_FULL) {
			unsigned cls = (unsigned)mpk__hdr_cls(mpk__hdr_get((uintptr_t)p).size); /* (live: tc_free() checked it) */
			mpk__tc_flush(tc, cls, mpk__tc_lim[cls] / 2);
			k = tc_free(tc, p, mpk__san_vg, false);
		}
		if (k == TC_DONE)
			rc = 0;
	}
	if (rc == -2)
		rc = mpk__heap_release(h, p, &m, "mpk_heap_free");
	mpk__meta_close(&s);
	mpk__tc_renew();
	if (!rc)
		errno = err;
	return mpk__misuse_rc(rc, &m);
}

MPK_EXPORT int mpk_heap_free(mpk_heap *hp, void *p)
{
	struct tcache *tc = tc_of(hp);

	/* p NULL needs no test of its own: tc_live() sends it the slow way
	 * (its header's address is in no chunk), which frees nothing. */
	if (likely(tc) && likely(tc_free(tc, p, false, true) == TC_DONE))
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
	int cls = (int)tc_class(size);
	size_t old;

	/* A size past its class's (a header forged with the key) goes the
	 * slow way, which names it: the copy below reads hd.size bytes. */
	if (cls < 0 || !tc_live(tc, a, &hd, &old, vg, false) || hd.size > mpk__tc_cap[old] ||
	    (size >= REALLOC_BIG && size > hd.size))
		return NULL;
	if ((size_t)cls == old) {
		uint64_t w = mpk__hdr_word(size, cls);
		mpk__hdr_set_vg(a, w, mpk__hdr_sum(tc->key, a, w, 0), vg);
		return p;
	}
	void *q = tc_malloc(tc, size, vg, false);
	if (!q && h) {
		/* The slow path (metadata open): a batch, or a page run. */
		if (cls >= NCLASSES)
			q = mpk__heap_alloc(h, size, 16, false);
		else if (!mpk__tc_refill(tc, (unsigned)cls))
			q = tc_malloc(tc, size, vg, false);
	}
	if (!q)
		return NULL;
	memcpy(q, p, size < hd.size ? size : hd.size);
	int k = tc_free(tc, p, vg, false);
	if (k == TC_FULL && h) {
		mpk__tc_flush(tc, (unsigned)old, mpk__tc_lim[old] / 2);
		k = tc_free(tc, p, vg, false);
	}
	if (k != TC_DONE)
		mpk_heap_free(hp, p); /* the usual way (it opens what it needs) */
	return q;
}

MPK_EXPORT void *mpk_heap_realloc(mpk_heap *hp, void *p, size_t size)
{
	struct tcache *tc = tc_of_take(hp);
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
		q = p ? mpk__heap_realloc_in(h, p, size, &m, &kind) : mpk__heap_alloc(h, size, 16, false);
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
	int want = mpk__block_rights(h, false);
	if (want && mpk__heap_reach(h->domain, want, &b)) {
		mpk__meta_close(&s);
		return 0;
	}
	struct arena *a;
	kind = mpk__heap_locate(h, (uintptr_t)p, &l, &a);
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
			mpk__remote_drain(a);
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
	st->mapped_peak = __atomic_load_n(&h->mapped_peak, __ATOMIC_RELAXED);
	mpk__meta_close(&s);
	return 0;
}
