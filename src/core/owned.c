/* SPDX-License-Identifier: MIT */
/*
 * The layers' owned regions (heap chunks, big blocks, vault chunks), past
 * making and freeing them (memory.c): fresh memory put into a domain,
 * regions that grow and shrink in place (a live part and a tail apart),
 * and regions that move (mremap).  Both locks held throughout: mpk_g.lock,
 * then the domain's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>

#include "internal.h"
#include "os.h"
#include "window.h"

void *mpk__remap_owned(struct mpk_domain *d, void *addr, size_t new_len)
{
	size_t page = mpk_os_page_size();
	struct mpk_region *r;
	void *p = NULL;

	new_len = (new_len + page - 1) & ~(page - 1);
	pthread_mutex_lock(&mpk_g.lock);
	r = mpk__region_find(d, addr);
	if (!r || !r->owned || !new_len || r->cap != r->len) {
		errno = EINVAL;
		pthread_mutex_unlock(&mpk_g.lock);
		return NULL;
	}
	mpk__lock(&d->lock); /* d owns r: alive */
	if (new_len == r->len) {
		p = addr;
		goto out;
	}
	/* Somewhere else in a window (the reservation around a region is its
	 * guard, so it never grows in place), registered there before the
	 * pages move so that a failure at any step changes nothing. */
	if (r->sealed) {
		errno = EPERM;
		goto out;
	}
	size_t old_len = r->len;
	void *q = mpk__window_carve(new_len, 0);
	struct mpk_region *nr = q ? mpk__region_add(d, q, new_len) : NULL;
	if (!nr || mpk__window_move(addr, old_len, q, new_len)) {
		int err = errno;
		if (nr)
			mpk__region_del(nr);
		if (q)
			mpk__window_uncarve(q, new_len);
		errno = err;
		goto out;
	}
	nr->owned = true;
	nr->exec = r->exec;
	nr->secret = r->secret; /* the mapping moved, memfd_secret and all */
	mpk__region_del(r);
	mpk_os_name_region(q, new_len, d->name);
	p = q;
out:
	mpk__unlock(&d->lock);
	pthread_mutex_unlock(&mpk_g.lock);
	return p;
}

/* Mark [p, p+n) a growing region's tail, a mapping apart from its live
 * part (MADV_DODUMP: it holds nothing); false where it cannot be: after
 * mpk_lockdown(), whose filter denies that, or the kernel refused.
 * Growing takes the flag off again (mpk__owned_grow). */
static bool tail_apart(void *p, size_t n)
{
	return !mpk_os_is_locked() &&
	       !mpk_os_madvise(p, n, MADV_DODUMP);
}

/* Put fresh memory mpkit just mapped (any protection) into d, owned: all
 * of it, or where it grows its first page, gets d's protection, the rest
 * stays PROT_NONE for mpk__owned_grow(); on failure it is left PROT_NONE
 * with no key, for the caller to unmap. */
static int adopt_fresh(struct mpk_domain *d, void *addr, size_t len, bool grows, bool secret)
{
	int rc = -1, err = EINVAL;

	pthread_mutex_lock(&mpk_g.lock);
	if (!mpk__domain_ok(d)) {
		pthread_mutex_unlock(&mpk_g.lock);
		errno = EINVAL;
		return -1;
	}
	mpk__lock(&d->lock);
	/* The tail apart (see mpk__map_fresh), or all live.  Under the core
	 * lock, which mpk_lockdown() holds while it installs its filter.
	 * Secret memory's tail is reserved memory, apart already. */
	size_t live = len, page = mpk_os_page_size();
	if (grows && len > page && (secret || tail_apart((char *)addr + page, len - page)))
		live = page;
	/* The caller mapped it: no /proc check, and it may be PROT_NONE, so
	 * the soft case always sets the protection. */
	if (d->key >= 0 ? mpk_os_pkey_mprotect(addr, live, PROT_READ | PROT_WRITE, d->key)
			: mpk_os_mprotect(addr, live, d->prot)) {
		err = errno;
		goto out;
	}
	struct mpk_region *r = mpk__region_add(d, addr, live);
	if (!r) {
		err = errno;
		/* PROT_NONE and no key: the caller unmaps it. */
		mpk__untag(d, addr, live, PROT_NONE);
		goto out;
	}
	r->cap = len;
	r->owned = true; /* only the heap maps fresh memory */
	r->secret = secret;
	mpk_os_name_region(addr, len, d->name);
	rc = 0;
out:
	return mpk__unlock_both(d, rc, err);
}

/*
 * A region that grows (a vault chunk) is two mappings: the live part and
 * a PROT_NONE tail.  A soft open or close then mprotect()s only the live
 * part, so its cost follows the pages in use, not the chunk's size.  They
 * must not merge into one VMA when the live part is closed, or each open
 * would split it again: the tail differs in one flag, it may be dumped
 * (it holds nothing yet), and growing turns that flag off.  Where that
 * flag cannot be set, it is all live from the start.  Secret memory
 * (memfd_secret) is live over its first page only, the tail reserved
 * memory, and grows by mapping more (secretmem.c: the kernel charges a
 * secret mapping whole to RLIMIT_MEMLOCK).
 */
void *mpk__map_fresh(struct mpk_domain *d, size_t len, size_t align, unsigned flags)
{
	bool secret;
	size_t first = (flags & MPK__REGION_GROWS) ? mpk_os_page_size() : len;
	void *p = mpk__secret_window_map(d->secretmem, flags & MPK__REGION_VAULT, len, first,
					 align, PROT_NONE, &secret);

	if (p && adopt_fresh(d, p, len, flags & MPK__REGION_GROWS, secret)) {
		int err = errno;
		mpk__window_unmap(p, len);
		errno = err;
		p = NULL;
	}
	return p;
}

/* r, d's owned region at addr, with both locks held; or NULL/EINVAL and
 * no lock held. */
static struct mpk_region *owned_locked(struct mpk_domain *d, void *addr, size_t len)
{
	struct mpk_region *r;

	pthread_mutex_lock(&mpk_g.lock);
	r = mpk__region_find(d, addr);
	if (!r || !r->owned || !len || len > r->cap) {
		pthread_mutex_unlock(&mpk_g.lock);
		errno = EINVAL;
		return NULL;
	}
	mpk__lock(&d->lock); /* d owns r: alive */
	return r;
}

/* Secret memory over r's reserved [lo, lo+n) with the live part's state
 * (d->lock held); 0 or -1/errno, reserved still (or, where even that
 * mapping fails, PROT_NONE without a key: out of reach either way). */
static int grow_secret(struct mpk_domain *d, struct mpk_region *r, char *lo, size_t n, int prot)
{
	if (mpk__secret_extend(lo, n, d->key >= 0 ? PROT_NONE : prot))
		return -1;
	if ((d->key >= 0 && mpk_os_pkey_mprotect(lo, n, prot, d->key)) ||
	    mpk__region_resize(r, r->len + n)) {
		int err = errno;
		if (mpk__secret_reserve(lo, n))
			mpk__untag(d, lo, n, PROT_NONE);
		errno = err;
		return -1;
	}
	return 0;
}

int mpk__owned_grow(struct mpk_domain *d, void *addr, size_t want, size_t *live)
{
	size_t page = mpk_os_page_size();
	struct mpk_region *r = owned_locked(d, addr, want = (want + page - 1) & ~(page - 1));
	int rc = -1;

	if (!r)
		return -1;
	/* The new pages take the live part's page state. */
	char *lo = (char *)addr + r->len;
	size_t n = want > r->len ? want - r->len : 0;
	int prot = d->key >= 0 ? mpk__region_prot(r, PROT_READ | PROT_WRITE, d->key)
			       : mpk__region_prot(r, d->prot, 0);
	if (n && r->secret) {
		/* A mapping a step: at least doubling, so a chunk is a few
		 * mappings (nine at most for 1 MiB), not one a page.  Near
		 * RLIMIT_MEMLOCK the pages needed may fit where the step
		 * does not. */
		size_t step = n >= r->len ? n : r->len < r->cap - r->len ? r->len : r->cap - r->len;
		if (grow_secret(d, r, lo, step, prot) &&
		    (step == n || errno != ENOMEM || grow_secret(d, r, lo, n, prot)))
			goto out;
		mpk__registry_set(r);
	} else if (n) {
		/* The page state, then the flag that joins them. */
		if (d->key >= 0 ? mpk_os_pkey_mprotect(lo, n, prot, d->key)
				: prot != PROT_NONE && mpk_os_mprotect(lo, n, prot)) /* else so */
			goto out;
		if (mpk_os_madvise(lo, n, MADV_DONTDUMP) || mpk__region_resize(r, want)) {
			int err = errno;
			tail_apart(lo, n);
			mpk__untag(d, lo, n, PROT_NONE);
			errno = err;
			goto out;
		}
		mpk__registry_set(r);
	}
	*live = r->len;
	rc = 0;
out:
	return mpk__unlock_both(d, rc, errno);
}

void mpk__owned_shrink(struct mpk_domain *d, void *addr, size_t live)
{
	struct mpk_region *r = owned_locked(d, addr, live);

	if (!r)
		return;
	/* Secret memory: reserved again in place, its pages given back (and
	 * no longer charged).  Else apart first: where they cannot be (after
	 * mpk_lockdown()) the pages stay live rather than join the live
	 * part's mapping; so do secret pages where no mapping can be made. */
	if (live < r->len && !(live & (mpk_os_page_size() - 1)) && r->secret) {
		if (!mpk__secret_reserve((char *)addr + live, r->len - live)) {
			mpk__region_resize(r, live);
			mpk__registry_set(r);
		}
	} else if (live < r->len && !(live & (mpk_os_page_size() - 1)) &&
		   tail_apart((char *)addr + live, r->len - live)) {
		char *lo = (char *)addr + live;
		size_t n = r->len - live;
		mpk__region_resize(r, live);
		mpk__untag(d, lo, n, PROT_NONE);
		mpk__registry_set(r);
	}
	mpk__unlock_both(d, 0, 0);
}
