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
 */
#define _GNU_SOURCE
#include <errno.h>

#include "heap.h"

pthread_mutex_t mpk__vault_lock = PTHREAD_MUTEX_INITIALIZER; /* making vaults */

/* The vault of d, or NULL (metadata open). */
static struct heap *vault_find(struct mpk_domain *d)
{
	struct heap *h;

	pthread_mutex_lock(&mpk__heaps_lock);
	for (h = *mpk__meta_heaps(); h; h = h->next)
		if ((h->flags & HEAP_SECRET) && h->domain == d && !h->unmade)
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
	if (p)
		mpk__vl_handed(d, p);
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
	if (h && (h->flags & HEAP_SECRET)) {
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
	if (p == t_last.p && t_last.epoch == __atomic_load_n(&mpk__runs_epoch, __ATOMIC_ACQUIRE) &&
	    (__atomic_load_n(t_last.live, __ATOMIC_RELAXED) & t_last.mask))
		return t_last.d;
	/* Read before the lookup: a run given back during it is seen. */
	uint64_t epoch = __atomic_load_n(&mpk__runs_epoch, __ATOMIC_ACQUIRE);
	struct heap *h = mpk__heap_owner(p);
	if (!h || !(h->flags & HEAP_SECRET))
		return NULL;
	/* Slab blocks: the live bit (a listed block is not live). */
	const uint64_t *w;
	uint64_t mask;
	int live = mpk__vl_live(h, p, &w, &mask);
	if (live > 0) {
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

/* The calling thread's rights to the domain holding secret p. */
static int secret_set(void *p, int rights)
{
	struct mpk_domain *d;
	mpk_scope s;

	if (mpk__ensure_init())
		return -1;
	if (!p) {
		errno = EINVAL;
		return -1;
	}
	if (mpk__meta_open(&s))
		return -1;
	d = secret_domain(p);
	mpk__meta_close(&s);
	if (!d) {
		errno = EINVAL;
		return -1;
	}
	return mpk_set(d, rights);
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
