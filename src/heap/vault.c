/* SPDX-License-Identifier: MIT */
/*
 * Secret vaults.  The vault of a domain is a heap made on the domain's first
 * mpk_secret_alloc(): no block headers (a 32-byte key takes 32 bytes, and
 * many share a page), every run locked in memory while it holds a secret,
 * chunks excluded from core dumps (MADV_DONTDUMP) and zero in a forked
 * child (MADV_WIPEONFORK), blocks wiped when freed.  Rights are the domain's:
 * a secret opens and closes with its domain, for the calling thread.  The
 * vault lives until its domain is destroyed, which fails with EBUSY while a
 * secret is live.
 *
 * The vault's run policy lives here too, so the rest of the heap layer
 * asks a few questions (heap.h) instead of testing the flag: how its
 * chunks and regions are mapped, runs locked as they are taken and
 * unlocked and purged as they go back, what stays locked while empty,
 * the live part of a chunk shrinking, blocks wiped when freed, and the
 * locks taken again in a forked child.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "heap.h"

pthread_mutex_t mpk__vault_lock = PTHREAD_MUTEX_INITIALIZER; /* making vaults */

/* ---- the vault's run policy ---- */

int mpk__vault_chunk(struct heap *h, void *base, size_t *live, bool *secret)
{
	if (!mpk__vault(h))
		return 0;
	/* Its live part: a page, or all of it where the kernel could not
	 * keep the rest apart (core.h). */
	if (mpk__owned_grow(h->domain, base, mpk__page(), live))
		return -1;
	*secret = mpk__secret_at(base);
	return 0;
}

void mpk__vault_unlock(struct heap *h, void *addr, size_t len)
{
	if (mpk__vault(h))
		mpk_os_munlock(addr, len);
}

int mpk__heap_lock_pages(struct heap *h, void *addr, size_t len)
{
	mpk_scope s;
	int rc;

	/* memfd_secret pages are locked by the kernel, which refuses
	 * mlock() on them (ENOMEM). */
	if (mpk__secret_at(addr))
		return 0;
	/* mlock() faults the pages in: they must be reachable (it fails on
	 * PROT_NONE, and on hw under a closed key). */
	if (mpk__heap_reach(h->domain, MPK_RW, &s))
		return -1;
	/* mlock()'s errno as it is: ENOMEM past RLIMIT_MEMLOCK, EPERM only
	 * when the limit is 0 without CAP_IPC_LOCK, EAGAIN. */
	rc = mpk_os_mlock(addr, len);
	mpk__heap_leave(&s);
	return rc;
}

/* A vault chunk's pages up to end are live (the domain's protection). */
static int live_to(struct heap *h, struct chunk *c, unsigned end)
{
	size_t live;

	if (end <= c->live)
		return 0;
	if (mpk__owned_grow(h->domain, (void *)c->base, (size_t)end << mpk__heap_page_shift, &live))
		return -1;
	c->live = (uint16_t)(live >> mpk__heap_page_shift);
	return 0;
}

/* What a vault chunk's live part shrinks to when nothing from page end
 * on is in use (c->live or more: it does not): a page if the chunk is
 * idle, VAULT_KEEP if end is within it, else end if that is less than
 * half (growth doubles: no shrink and grow again at each step). */
static unsigned shrink_to(const struct chunk *c, unsigned end, bool idle)
{
	unsigned keep = (unsigned)(VAULT_KEEP >> mpk__heap_page_shift);

	return idle ? 1 : end <= keep ? keep : end * 2u < c->live ? end : c->live;
}

/* The end of the last run before page pg of c that holds blocks: free
 * runs and empty slabs in between are passed over. */
static unsigned used_below(const struct chunk *c, unsigned pg)
{
	while (pg) {
		const struct run *p = &c->runs[c->owner[pg - 1]];
		if (p->kind != RUN_FREE && !(p->kind == RUN_SLAB && p->spare))
			break;
		pg = p->page;
	}
	return pg;
}

static bool vault_spare_ok(struct arena *a, const struct run *r)
{
	size_t keep = VAULT_KEEP >> mpk__heap_page_shift, n = r->pages;
	const struct chunk *rc = r->chunk;

	/* Nor one that would hold up a shrink: the last run in use, with
	 * only free and empty ones below it down to one that is not. */
	if (used_below(rc, rc->npages) == r->page + r->pages &&
	    shrink_to(rc, used_below(rc, r->page), false) < rc->live)
		return false;
	for (struct chunk *c = a->chunks; c && n <= keep; c = c->next)
		n += c->spare_pages;
	return n <= keep;
}

/* Pages from page from of vault chunk c on hold no block: its empty slabs
 * there go, and they become one free run. */
static void vault_clear(struct arena *a, struct chunk *c, unsigned from)
{
	size_t page = mpk__page();

	for (unsigned pg = from; pg < c->npages; pg += c->runs[pg].pages) {
		struct run *r = &c->runs[pg];
		if (r->kind == RUN_FREE) {
			mpk__free_remove(a, r);
		} else { /* empty: its blocks were wiped as they were freed */
			void *at = (void *)run_addr(c, r);
			a->bins[r->cls].spare = NULL;
			r->spare = 0;
			c->spare_pages = (uint16_t)(c->spare_pages - r->pages);
			c->nfree = (uint16_t)(c->nfree + r->pages);
			mpk_os_munlock(at, r->pages * page);
			mpk_os_madvise(at, r->pages * page, MADV_DONTNEED);
		}
		r->kind = RUN_NONE;
	}
	struct run *r = &c->runs[from];
	r->chunk = c;
	r->page = (uint16_t)from;
	r->pages = (uint16_t)(c->npages - from);
	r->clean = 1;
	mpk__free_insert(a, c, r);
}

/* A run of chunk c went (c kept); in a vault: an idle chunk's empty slabs go,
 * and its live part shrinks to a page; else, where nothing past page end
 * is in use but empty slabs, they go if the live part can then shrink.
 * memfd_secret is charged to RLIMIT_MEMLOCK while mapped, in use or not. */
void mpk__vault_trim(struct arena *a, struct chunk *c, bool idle)
{
	if (!mpk__vault(a->heap))
		return;
	unsigned end = idle ? 0 : used_below(c, c->npages);
	unsigned to = shrink_to(c, end, idle);

	if ((idle && c->spare_pages) || to < c->live)
		vault_clear(a, c, end);
	if (to >= c->live)
		return;
	mpk__owned_shrink(a->heap->domain, (void *)c->base, (size_t)to << mpk__heap_page_shift);
	c->live = (uint16_t)to; /* if it could not, the next growth finds out */
}

int mpk__vault_relock(struct heap *h)
{
	struct arena *a = &h->arenas[0]; /* a vault has one */
	size_t page = mpk__page();

	for (struct chunk *c = a->chunks; c; c = c->next)
		for (unsigned pg = 0; pg < c->npages; pg += c->runs[pg].pages) {
			struct run *r = &c->runs[pg];
			if (r->kind != RUN_FREE &&
			    mpk__heap_lock_pages(h, (void *)run_addr(c, r), r->pages * page))
				return -1;
		}
	return mpk__bigs_relock(h);
}

int mpk__vault_run_take(struct arena *a, struct chunk *c, struct run *r)
{
	unsigned live = c->live;

	if (!mpk__vault(a->heap) ||
	    (!live_to(a->heap, c, r->page + r->pages) &&
	     !mpk__heap_lock_pages(a->heap, (void *)run_addr(c, r), r->pages * mpk__page())))
		return 0;
	int err = errno;
	r->clean = 1; /* mlock() failed before touching it */
	/* Before the free, which may give the chunk back (c gone):
	 * nothing else took pages past live, under the arena's lock. */
	if (c->live != live) {
		mpk__owned_shrink(a->heap->domain, (void *)c->base, (size_t)live << mpk__heap_page_shift);
		c->live = (uint16_t)live;
	}
	mpk__run_free(a, c, r);
	errno = err;
	return -1;
}

void mpk__vault_run_give(struct arena *a, struct chunk *c, struct run *r)
{
	if (!mpk__vault(a->heap))
		return;
	/* Wiped by the caller; unlocked first, as locked pages cannot be
	 * purged. */
	void *at = (void *)run_addr(c, r);
	size_t len = (size_t)r->pages << mpk__heap_page_shift;
	mpk_os_munlock(at, len);
	mpk_os_madvise(at, len, MADV_DONTNEED);
	r->clean = 1;
}

bool mpk__vault_keeps_spare(struct arena *a, const struct run *r, bool idles)
{
	return !mpk__vault(a->heap) || (!idles && vault_spare_ok(a, r)); /* locked for nothing */
}

int mpk__vault_ready(struct heap *h)
{
	/* A forked child: its vault's pages are not locked (mlock is not
	 * inherited); lock them before handing out a secret. */
	if (!mpk__vault(h) || h->lock_gen == __atomic_load_n(&mpk__fork_gen, __ATOMIC_RELAXED))
		return 0;
	if (mpk__vault_relock(h))
		return -1;
	h->lock_gen = mpk__fork_gen;
	return 0;
}

void mpk__block_wipe(const struct heap *h, uintptr_t a, size_t cap)
{
	if (mpk__vault(h))
		explicit_bzero((void *)a, cap);
	else if (h->flags & MPK_HEAP_WIPE)
		memset((void *)a, 0, cap);
}

/* ---- vaults made and found ---- */

/* The vault of d, or NULL (metadata open). */
static struct heap *vault_find(struct mpk_domain *d)
{
	struct heap *h;

	pthread_mutex_lock(&mpk__heaps_lock);
	for (h = *mpk__meta_heaps(); h; h = h->next)
		if (mpk__vault(h) && h->domain == d && !h->unmade)
			break;
	pthread_mutex_unlock(&mpk__heaps_lock);
	return h;
}

/* mpk_domain_destroy(d) asks first: an empty vault goes, a full one says
 * EBUSY, and so does one whose domain has other holds (a heap, a seal),
 * for which the destroy would fail after the vault went. */
static int detach(struct mpk_domain *d)
{
	mpk_scope s;
	struct heap *h;
	size_t live = 0;

	if (mpk__meta_open(&s))
		return -1;
	pthread_mutex_lock(&mpk__vault_lock);
	if ((h = vault_find(d))) {
		pthread_mutex_lock(&h->arenas[0].lock); /* a vault has one */
		/* Blocks in threads' lists are the vault's, not live. */
		live = h->arenas[0].blocks - mpk__vault_listed(&h->arenas[0]);
		pthread_mutex_unlock(&h->arenas[0].lock);
	}
	pthread_mutex_unlock(&mpk__vault_lock);
	if (h && !live && mpk__domain_holds(d) > 1)
		live = 1; /* held by more than its vault: EBUSY, vault kept */
	if (h && !live) {
		/* Closes s; may destroy the metadata domain, whose own
		 * destruction asks here again: no lock is held. */
		mpk__heap_delete(h, &s);
		return 0;
	}
	mpk__meta_close(&s);
	if (live) {
		errno = EBUSY;
		return -1;
	}
	return 0;
}

/* The vault of d, made if need be: the heap, or NULL with errno.  If
 * this call made it (*made), mpk__vault_lock stays held: no other thread
 * finds the vault before its first secret is in, or it is gone again. */
static struct heap *vault_get(struct mpk_domain *d, bool *made)
{
	mpk_scope s;
	struct heap *h = NULL;

	*made = false;
	pthread_mutex_lock(&mpk__vault_lock);
	if (!mpk__meta_open(&s)) {
		h = vault_find(d);
		mpk__meta_close(&s);
		if (!h && (h = mpk__heap_new(d, HEAP_SECRET))) {
			__atomic_store_n(&mpk__domain_detach, detach, __ATOMIC_RELEASE);
			*made = true;
			return h;
		}
	}
	pthread_mutex_unlock(&mpk__vault_lock);
	return h;
}

MPK_EXPORT void *mpk_secret_alloc(mpk_domain *d, size_t len)
{
	struct heap *h;
	mpk_scope s;
	bool made;

	if (mpk__ensure_init())
		return NULL;
	if (!mpk__domain_valid(d) || !len) {
		errno = EINVAL;
		return NULL;
	}
	if (len > PTRDIFF_MAX / 2) {
		errno = ENOMEM;
		return NULL;
	}
	/* The thread's list first: no lock (vlist.c). */
	if (mpk__meta_open(&s))
		return NULL;
	void *p = mpk__vl_alloc(d, len);
	mpk__meta_close(&s);
	if (p)
		return p;
	if (!(h = vault_get(d, &made)))
		return NULL;
	if (mpk__meta_open(&s)) {
		/* Rare (mprotect): a vault made now stays, empty. */
		if (made)
			pthread_mutex_unlock(&mpk__vault_lock);
		return NULL;
	}
	p = mpk__heap_alloc(h, len, 16, false);
	/* Out of locked memory: this thread's listed blocks go back first. */
	struct tcache *tc;
	if (!p && !made && (tc = mpk__tc_vault(d)) && mpk__vl_flush(tc))
		p = mpk__heap_alloc(h, len, 16, false);
	/* A block a planted list entry claimed first stays theirs. */
	for (int tries = 0; p && !mpk__vl_handed(d, p) && tries < 8; tries++)
		p = mpk__heap_alloc(h, len, 16, false);
	if (!p && made) {
		/* Its first secret failed: the vault goes as it came, and
		 * the metadata domain if it came with it.  Nobody else saw
		 * it; unmade, nobody will (destroying it needs no lock). */
		int err = errno;
		h->unmade = true;
		pthread_mutex_unlock(&mpk__vault_lock);
		mpk__heap_delete(h, &s);
		errno = err;
		return NULL;
	}
	mpk__meta_close(&s);
	if (made)
		pthread_mutex_unlock(&mpk__vault_lock);
	return p;
}

/* An overflowing n * size goes on as SIZE_MAX: a bad domain is still
 * EINVAL first, then the size is ENOMEM, as for any secret too big. */
MPK_EXPORT void *mpk_secret_allocarray(mpk_domain *d, size_t n, size_t size)
{
	size_t len;

	if (__builtin_mul_overflow(n, size, &len))
		len = SIZE_MAX;
	return mpk_secret_alloc(d, len);
}

MPK_EXPORT int mpk_secret_free(void *p)
{
	struct mpk_misuse m;
	mpk_scope s;
	int rc;

	if (!p)
		return 0;
	if (mpk__ensure_init() || mpk__meta_open(&s))
		return -1;
	struct heap *h = mpk__heap_owner(p);
	if (h && mpk__vault(h)) {
		if ((rc = mpk__vl_free(h, p, &m)) == VL_SLOW)
			rc = mpk__heap_release(h, p, &m, "mpk_secret_free");
	} else {
		mpk__misuse_fill(&m, MPK_MISUSE_WILD, "mpk_secret_free", p, NULL);
		rc = m.kind;
	}
	mpk__meta_close(&s);
	return mpk__misuse_rc(rc, &m);
}

/*
 * The secret this thread last opened or closed: its domain and its live
 * bit, so that the next open or close of it skips the address map.  On
 * the soft backend each follows a system call, after which every cache
 * line is cold, and the map's levels, chunk and run were a third of the
 * library's time around the mprotect() pair.  Good while no run went
 * back since (mpk__runs_epoch) and the bit is set: a freed secret, or
 * another block at its address after its run went, is never taken for it.
 * Thread-local memory is open to an attacker who writes memory, and a
 * rewritten domain would be the one the call opens for the secret: with
 * the metadata sealed the hint is not kept (every call finds the secret
 * through the map, whose levels, chunk and run are sealed).  Open, the
 * map is plain memory too: the hint adds no way in.
 */
static __thread struct {
	const void *p;
	const uint64_t *live;
	uint64_t mask, epoch;
	struct mpk_domain *d;
} t_last __attribute__((tls_model("initial-exec")));

/* The domain of live secret p, or NULL (metadata open). */
static struct mpk_domain *secret_domain(const void *p)
{
	bool hint = !mpk__meta_closed();

	if (hint && p == t_last.p && t_last.epoch == __atomic_load_n(&mpk__runs_epoch, __ATOMIC_ACQUIRE) &&
	    (__atomic_load_n(t_last.live, __ATOMIC_RELAXED) & t_last.mask))
		return t_last.d;
	/* Read before the lookup: a run given back during it is seen. */
	uint64_t epoch = __atomic_load_n(&mpk__runs_epoch, __ATOMIC_ACQUIRE);
	struct heap *h = mpk__heap_owner(p);
	if (!h || !mpk__vault(h))
		return NULL;
	/* Slab blocks: the live bit (a listed block is not live). */
	const uint64_t *w;
	uint64_t mask;
	int live = mpk__vl_live(h, p, &w, &mask);
	if (live > 0) {
		if (!hint)
			return h->domain;
		t_last.p = NULL; /* a handler's call in between sees no half entry */
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		t_last.live = w;
		t_last.mask = mask;
		t_last.epoch = epoch;
		t_last.d = h->domain;
		__atomic_signal_fence(__ATOMIC_RELEASE);
		t_last.p = p;
		return h->domain;
	}
	return live < 0 && mpk__heap_live(h, p) ? h->domain : NULL;
}

/* The domain of live secret p, or NULL and errno.  Out of line, so that
 * secret_set() ends in a tail call: on soft, the mprotect() is then made
 * with no frame of the vault's above it (see mpk_os_mprotect_inline). */
static __attribute__((noinline)) struct mpk_domain *secret_lookup(void *p)
{
	struct mpk_domain *d;
	mpk_scope s;

	if (mpk__ensure_init())
		return NULL;
	if (!p) {
		errno = EINVAL;
		return NULL;
	}
	if (mpk__meta_open(&s))
		return NULL;
	d = secret_domain(p);
	mpk__meta_close(&s);
	if (!d)
		errno = EINVAL;
	return d;
}

/* The calling thread's rights to the domain holding secret p. */
static int secret_set(void *p, int rights)
{
	struct mpk_domain *d = secret_lookup(p);

	return d ? mpk__set(d, rights) : -1;
}

MPK_EXPORT int mpk_secret_noaccess(void *p)
{
	return secret_set(p, MPK_NONE);
}

MPK_EXPORT int mpk_secret_readonly(void *p)
{
	return secret_set(p, MPK_READ);
}

MPK_EXPORT int mpk_secret_readwrite(void *p)
{
	return secret_set(p, MPK_RW);
}
