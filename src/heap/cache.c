/* SPDX-License-Identifier: MIT */
/*
 * Per-thread caches of small blocks (see heap.h): where a thread's caches
 * live, how one is found for a heap and checked again after any heap went,
 * and how they are given back when the thread exits.  The fast paths that
 * use them are in calls.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "heap.h"

struct bundle {
	struct tcache c[TC_HEAPS];
	unsigned next; /* the entry to reuse when all are taken */
	unsigned used; /* entries ever given a heap (a bit each): wipe() scans those */
};

/* Bundles of threads that exited, each wiped, for the next threads to
 * take: a thread's start and exit then map and unmap nothing, and the
 * pages it touches are the last one's.  A slot is taken by exchange, so
 * two threads never get one bundle. */
#define POOL 4
static struct bundle *pool[POOL];

static __thread struct bundle *mine __attribute__((tls_model("initial-exec")));
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static bool key_ok;

/*
 * Whether b may be a bundle: none of it in the heap-meta area (as the
 * seal page, read-only while sealed, says) nor in any domain's memory
 * (the core's record).  The pool, the thread's pointer and the exit key's
 * value are open memory, and the heap calls write a bundle's entries with
 * the metadata open (and, some, a heap's domain): a pointer rewritten
 * into the area would have them write their keys, counts and zeros there.
 * One that points elsewhere gives a cache the attacker could write anyway
 * (caches are open memory; sealed, only vaults have entries, hints
 * checked against their runs).
 */
static bool bundle_ok(const struct bundle *b)
{
	return b && !((uintptr_t)b & 4095) && !mpk__meta_overlaps(b, sizeof(*b)) &&
	       !mpk__range_overlaps(b, sizeof(*b));
}

/* Whether h is a live heap with this uid (the heaps lock held). */
static bool alive(const struct heap *h, uint32_t uid)
{
	for (struct heap *x = *mpk__meta_heaps(); x; x = x->next)
		if (x == h)
			return x->magic == HEAP_MAGIC && x->uid == uid;
	return false;
}

static struct bundle *pool_take(void)
{
	for (int i = 0; i < POOL; i++) {
		struct bundle *b = __atomic_exchange_n(&pool[i], NULL, __ATOMIC_ACQUIRE);
		if (bundle_ok(b))
			return b; /* (a rewritten one is dropped) */
	}
	return NULL;
}

/* b goes to the pool, or, the pool full, back to the kernel. */
static void pool_put(struct bundle *b)
{
	for (int i = 0; i < POOL; i++) {
		struct bundle *none = NULL;
		if (__atomic_compare_exchange_n(&pool[i], &none, b, false, __ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			return;
	}
	mpk_os_unmap(b, sizeof(*b));
}

static void reset(struct tcache *tc, struct heap *h);

/* Nothing of a thread's caches outlives it: every entry's header (keys,
 * hints, counts, the stacks' tops) and every slot ever written is
 * zeroed.  A class's written slots are a prefix of its stack (an entry
 * is written at the count or below), never 0 (mkey is odd, a block
 * even), so the scan stops at the first 0 and reads no page the thread
 * did not touch. */
static struct bundle *wipe(struct bundle *b)
{
	for (int i = 0; i < TC_HEAPS; i++) {
		if (!(b->used & 1u << i))
			continue;
		for (unsigned c = 0; c < NTC; c++) {
			if (!b->c[i].slot[c][0])
				continue; /* never written */
			for (unsigned j = 0; j < TC_MAX && b->c[i].slot[c][j]; j++)
				b->c[i].slot[c][j] = 0;
		}
		reset(&b->c[i], NULL);
	}
	b->next = b->used = 0;
	return b;
}

/* A thread exits: its blocks go back to heaps still alive, its bundle,
 * wiped, to the next thread. */
static void thread_gone(void *arg)
{
	struct bundle *b = arg;
	mpk_scope s;

	mpk__tc_last = NULL;
	mine = NULL;
	if (!bundle_ok(b))
		b = NULL; /* the key's value rewritten: left alone */
	if (b && !mpk__meta_open(&s)) {
		pthread_mutex_lock(&mpk__heaps_lock);
		for (int i = 0; i < TC_HEAPS; i++)
			if (b->c[i].heap && alive(b->c[i].heap, b->c[i].uid))
				mpk__tc_flush_all(&b->c[i]);
		pthread_mutex_unlock(&mpk__heaps_lock);
		mpk__meta_close(&s);
	}
	mpk__arena_leave();
	if (b)
		pool_put(wipe(b));
}

static void make_key(void)
{
	key_ok = !pthread_key_create(&exit_key, thread_gone);
}

/* With the first heap: a key made early is a low one, whose value glibc
 * and musl keep in the thread's descriptor, so that bundle()'s
 * pthread_setspecific() allocates nothing. */
void mpk__tc_init(void)
{
	pthread_once(&key_once, make_key);
}

/* The thread's bundle, made at its first cached call.  This is the one
 * place a heap call's slow path calls the C library in a way that may
 * allocate (pthread_setspecific() past the low keys), and the drop-in's
 * malloc comes back here for it without a guard of its own: that nested
 * call finds `making` set and goes without a cache, to the arena, whose
 * lock no caller here holds. */
static struct bundle *bundle(void)
{
	static __thread bool making __attribute__((tls_model("initial-exec")));
	struct bundle *b = mine;

	if (b)
		return bundle_ok(b) ? b : NULL; /* rewritten: no cache now */
	if (making)
		return NULL;
	mpk__tc_init();
	if (!key_ok)
		return NULL;
	if (!(b = pool_take()) && !(b = mpk_os_map(sizeof(*b), PROT_READ | PROT_WRITE)))
		return NULL;
	making = true;
	int err = pthread_setspecific(exit_key, b);
	making = false;
	if (err) {
		pool_put(b);
		return NULL;
	}
	return mine = b;
}

void mpk__tc_flush_all(struct tcache *tc)
{
	if (mpk__vault(tc->heap)) {
		(void)mpk__vl_flush(tc);
		return;
	}
	/* Sealed, ordinary heaps have no caches: such an entry was written
	 * into the bundle, and its slots would free live blocks. */
	if (mpk__meta_closed())
		return;
	for (unsigned c = 0; c < NTC; c++)
		if (tc->n[c])
			mpk__tc_flush(tc, c, tc->n[c]);
}

/* Entries given a heap so far, mixed into their keys. */
static uint64_t uses;

static void reset(struct tcache *tc, struct heap *h)
{
	uint64_t epoch = __atomic_load_n(&mpk__soft_gepoch, __ATOMIC_ACQUIRE);

	memset(tc, 0, offsetof(struct tcache, slot));
	tc->snap = tc->fsnap = TC_SNAP_NONE;
	tc->chunk = TC_CHUNK_NONE;
	if (!h)
		return;
	tc->heap = h;
	tc->uid = h->uid;
	tc->epoch = epoch;
	tc->key = h->key;
	tc->ckey = h->ckey;
	tc->tok = h->tok;
	/* Odd (wipe() relies on it), and new for each use of the entry: a
	 * bundle and a stack are used again, the count is not. */
	tc->mkey = mpk__mix(h->key ^ (uintptr_t)tc ^ (uintptr_t)&tc ^
			    __atomic_add_fetch(&uses, 1, __ATOMIC_RELAXED)) | 1;
	tc->domain = h->domain;
	tc->wipe = h->flags & MPK_HEAP_WIPE;
	tc->rw = TC_RW_NONE;
	tc->arena = NULL;
}

/* The snapshots that tell the fast paths the thread may still write the
 * cache's domain and the cache is current (tc_rw() and tc_current() in
 * calls.c), or none if it may not now.  tc->epoch was taken before. */
static void renew(struct tcache *tc)
{
	const struct mpk__domain_head *d = (const struct mpk__domain_head *)tc->domain;
	uint64_t now = __atomic_load_n(&mpk__soft_t.epoch, __ATOMIC_RELAXED);
	int k = __atomic_load_n(&d->key, __ATOMIC_ACQUIRE);

	if (k >= 0) {
		tc->rw = TC_RW_KEYED | (unsigned)k;
		tc->snap = (tc->epoch + now) | TC_RW_KEYED;
	} else if (mpk__soft_rights_now(d) == MPK_RW) {
		tc->rw = now;
		tc->snap = tc->epoch + now;
	} else {
		tc->rw = TC_RW_NONE;
		tc->snap = TC_SNAP_NONE;
	}
	tc->fsnap = tc->wipe ? TC_SNAP_NONE : tc->snap;
}

/* The fast paths find the last cache used here; under valgrind they find
 * none, and every call goes the slow way, where the client requests run.
 * The slow path's own use of the cache needs the snapshot too. */
static struct tcache *last(struct tcache *tc)
{
	renew(tc);
	if (!mpk__san_vg && !mpk__vault(tc->heap)) /* the heap calls' fast paths */
		mpk__tc_last = tc;
	return tc;
}

void mpk__tc_renew(void)
{
	struct tcache *tc = mpk__tc_last;

	if (tc && tc->heap)
		renew(tc);
}

struct tcache *mpk__tc_attach(struct heap *h)
{
	struct bundle *b = bundle();
	uint64_t epoch = __atomic_load_n(&mpk__soft_gepoch, __ATOMIC_ACQUIRE);
	struct tcache *tc = NULL;

	if (!b)
		return NULL;
	/* No heap went since this thread's entries were checked: no lock
	 * (two heaps' slow paths share none). */
	for (int i = 0; i < TC_HEAPS; i++) {
		struct tcache *e = &b->c[i];
		if (e->heap == h && e->uid == h->uid && e->epoch == epoch)
			return last(e);
	}
	/* After a heap went, entries are checked again: one whose heap is
	 * gone is dropped with its blocks (they went with the heap). */
	pthread_mutex_lock(&mpk__heaps_lock);
	for (int i = 0; i < TC_HEAPS; i++) {
		struct tcache *e = &b->c[i];
		if (e->heap && e->epoch != epoch) {
			if (alive(e->heap, e->uid)) {
				e->epoch = epoch;
				e->chunk = TC_CHUNK_NONE; /* its chunk may have gone back */
			} else {
				reset(e, NULL);
			}
		}
		if (e->heap == h && e->uid == h->uid)
			tc = e;
	}
	pthread_mutex_unlock(&mpk__heaps_lock);
	if (!tc) {
		for (int i = 0; i < TC_HEAPS && !tc; i++)
			if (!b->c[i].heap)
				tc = &b->c[i];
		if (!tc) {
			/* All taken: the oldest one gives its blocks back, if its
			 * heap is one (an entry of this epoch was not checked). */
			tc = &b->c[b->next++ % TC_HEAPS];
			pthread_mutex_lock(&mpk__heaps_lock);
			if (alive(tc->heap, tc->uid))
				mpk__tc_flush_all(tc);
			pthread_mutex_unlock(&mpk__heaps_lock);
		}
		reset(tc, h);
		b->used |= 1u << (tc - b->c);
	}
	return last(tc);
}

/* No lock: an entry of the current epoch names a heap still alive. */
struct tcache *mpk__tc_vault(struct mpk_domain *d)
{
	struct bundle *b = bundle_ok(mine) ? mine : NULL;
	uint64_t epoch = __atomic_load_n(&mpk__soft_gepoch, __ATOMIC_ACQUIRE);

	if (!b)
		return NULL;
	for (int i = 0; i < TC_HEAPS; i++) {
		struct tcache *e = &b->c[i];
		if (e->domain == d && e->heap && e->epoch == epoch && mpk__vault(e->heap))
			return e;
	}
	return NULL;
}

void mpk__tc_forget(struct heap *h)
{
	struct bundle *b = bundle_ok(mine) ? mine : NULL;

	mpk__heap_epoch_bump();
	if (!b)
		return;
	for (int i = 0; i < TC_HEAPS; i++)
		if (b->c[i].heap == h)
			reset(&b->c[i], NULL);
	if (mpk__tc_last && !mpk__tc_last->heap)
		mpk__tc_last = NULL;
}
