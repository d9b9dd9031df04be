/* SPDX-License-Identifier: MIT */
/* Domain memory: mapping, unmapping and adopting page-granular regions. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "internal.h"
#include "os.h"
#include "window.h"

/* Give a fresh mapping the domain's protection: its key (hw), or the
 * union of every thread's rights (soft).  Here and below, d's protection
 * is read and its region list changed under d->lock as well as
 * mpk_g.lock: a soft rights change holds only d->lock. */
int mpk__protect_new(struct mpk_domain *d, void *p, size_t len, bool exec)
{
	struct mpk_region as = { .exec = exec };

	if (d->key >= 0)
		return mpk_os_pkey_mprotect(p, len, mpk__region_prot(&as, PROT_READ | PROT_WRITE, d->key),
					    d->key);
	int prot = mpk__region_prot(&as, d->prot, 0);
	if (prot == (PROT_READ | PROT_WRITE))
		return 0; /* already so */
	return mpk_os_mprotect(p, len, prot);
}

void *mpk__alloc_region(struct mpk_domain *d, size_t len, unsigned flags)
{
	size_t page = mpk_os_page_size();
	struct mpk_region *r;
	void *p;

	if (mpk__ensure_init())
		return NULL;
	if (!mpk__domain_ok(d) || len == 0) {
		errno = EINVAL;
		return NULL;
	}
	if (len > PTRDIFF_MAX - page) {
		errno = ENOMEM; /* no memory holds it: as malloc() and mmap() say */
		return NULL;
	}
	len = (len + page - 1) & ~(page - 1);
	bool secret;
	p = mpk__secret_window_map(d->secretmem, flags & MPK__REGION_VAULT, len, len, 0,
				   PROT_READ | PROT_WRITE, &secret);
	if (!p)
		return NULL;
	pthread_mutex_lock(&mpk_g.lock);
	bool ok = mpk__domain_ok(d);
	if (ok)
		pthread_mutex_lock(&d->lock);
	if (!ok || mpk__protect_new(d, p, len, flags & MPK__REGION_EXEC) || !(r = mpk__region_add(d, p, len))) {
		int err = ok ? errno : EINVAL;
		mpk__window_unmap(p, len);
		errno = err;
		p = NULL;
		goto fail;
	}
	r->owned = flags & MPK__REGION_OWNED;
	r->exec = flags & MPK__REGION_EXEC;
	r->secret = secret;
	if (r->exec)
		mpk__registry_set(r);
	mpk_os_name_region(p, len, d->name);
fail:
	if (ok)
		pthread_mutex_unlock(&d->lock);
	pthread_mutex_unlock(&mpk_g.lock);
	return p;
}

static int free_region(struct mpk_domain *d, void *addr, bool owned)
{
	struct mpk_region *r;

	if (mpk__ensure_init())
		return -1;
	if (!mpk__domain_ok(d) || !addr) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&mpk_g.lock);
	r = mpk__region_find(d, addr);
	if (r && r->owned != owned)
		r = NULL;
	bool sealed = r && r->sealed;
	if (r && !sealed) {
		size_t len = r->cap;
		pthread_mutex_lock(&d->lock);
		mpk__region_del(r);
		pthread_mutex_unlock(&d->lock);
		mpk__region_release(addr, len);
	}
	pthread_mutex_unlock(&mpk_g.lock);
	if (!r || sealed) {
		errno = sealed ? EPERM : EINVAL;
		return -1;
	}
	return 0;
}

MPK_EXPORT void *mpk_alloc(mpk_domain *d, size_t len)
{
	return mpk__alloc_region(d, len, 0);
}

MPK_EXPORT int mpk_free(mpk_domain *d, void *addr)
{
	return free_region(d, addr, false);
}

void *mpk__alloc_owned(struct mpk_domain *d, size_t len)
{
	return mpk__alloc_region(d, len, MPK__REGION_OWNED);
}

int mpk__free_owned(struct mpk_domain *d, void *addr)
{
	return free_region(d, addr, true);
}

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
	pthread_mutex_lock(&d->lock); /* d owns r: alive */
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
	pthread_mutex_unlock(&d->lock);
	pthread_mutex_unlock(&mpk_g.lock);
	return p;
}

/* The end of an adopt or own: both locks go, errno says why it failed. */
static int unlock_both(struct mpk_domain *d, int rc, int err)
{
	pthread_mutex_unlock(&d->lock);
	pthread_mutex_unlock(&mpk_g.lock);
	if (rc)
		errno = err;
	return rc;
}

/* A failed adopt or own: d's key (or its protection) off [addr, len),
 * which gets prot. */
static void untag(const struct mpk_domain *d, void *addr, size_t len, int prot)
{
	if (d->key >= 0)
		mpk_os_pkey_mprotect(addr, len, prot, 0);
	else
		mpk_os_mprotect(addr, len, prot);
}

MPK_EXPORT int mpk_adopt(mpk_domain *d, void *addr, size_t len)
{
	size_t page = mpk_os_page_size();
	int rc = -1, err = EINVAL;

	if (mpk__ensure_init())
		return -1;
	if (!mpk__domain_ok(d) || !addr || len == 0 ||
	    ((uintptr_t)addr | len) & (page - 1) ||
	    len > UINTPTR_MAX - (uintptr_t)addr) {
		errno = EINVAL;
		return -1;
	}
	if (d->secretmem) {
		errno = EOPNOTSUPP; /* the caller's pages stay the kernel's to read */
		return -1;
	}
	pthread_mutex_lock(&mpk_g.lock);
	if (!mpk__domain_ok(d) || mpk__range_overlaps(addr, len)) {
		pthread_mutex_unlock(&mpk_g.lock);
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&d->lock);
	int anon = mpk_os_range_is_private_anon_rw(addr, len);
	if (anon <= 0) {
		err = anon < 0 ? errno : EINVAL;
		goto out;
	}
	if (mpk__protect_new(d, addr, len, false)) {
		err = errno;
		goto out;
	}
	struct mpk_region *r = mpk__region_add(d, addr, len);
	/* After mpk_lockdown(): a filter of its own, as a late window gets. */
	if (!r || mpk__cover((uintptr_t)addr, (uintptr_t)addr + len)) {
		err = errno;
		if (r)
			mpk__region_del(r);
		/* Undo: give the caller its memory back as it was. */
		untag(d, addr, len, PROT_READ | PROT_WRITE);
		goto out;
	}
	mpk_os_name_region(addr, len, d->name);
	rc = 0;
out:
	return unlock_both(d, rc, err);
}

MPK_EXPORT void *mpk_map_file(mpk_domain *d, int fd, off_t offset, size_t len)
{
	size_t page = mpk_os_page_size();
	struct mpk_region *r;
	struct stat st;
	void *p = NULL;
	int err = EINVAL;

	if (mpk__ensure_init())
		return NULL;
	if (!mpk__domain_ok(d) || len == 0 || offset < 0 || (offset & (off_t)(page - 1))) {
		errno = EINVAL;
		return NULL;
	}
	if (d->secretmem) {
		errno = EOPNOTSUPP; /* a file's pages are the kernel's to read */
		return NULL;
	}
	if (len > PTRDIFF_MAX - page) {
		errno = ENOMEM;
		return NULL;
	}
	if (fd < 0 || fstat(fd, &st)) {
		errno = EBADF;
		return NULL;
	}
	/* Pages past the end of a file raise SIGBUS, not a fault of ours. */
	if (S_ISREG(st.st_mode) && ((uintmax_t)offset > (uintmax_t)st.st_size ||
				    len > (uintmax_t)st.st_size - (uintmax_t)offset)) {
		errno = EINVAL;
		return NULL;
	}
	len = (len + page - 1) & ~(page - 1);
	pthread_mutex_lock(&mpk_g.lock);
	if (!mpk__domain_ok(d)) {
		pthread_mutex_unlock(&mpk_g.lock);
		errno = EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&d->lock);
	/* Outside the windows: after lockdown, covered before it is used. */
	p = mpk__covered_map(len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset);
	if (!p) {
		err = errno; /* EACCES: fd not open read-write, ENODEV... */
		goto out;
	}
	if (mpk__protect_new(d, p, len, false) || !(r = mpk__region_add(d, p, len))) {
		err = errno;
		mpk__covered_unmap(p, len);
		p = NULL;
		goto out;
	}
	r->owned = false; /* the caller's: mpk_free() unmaps it */
out:
	pthread_mutex_unlock(&d->lock);
	pthread_mutex_unlock(&mpk_g.lock);
	if (!p)
		errno = err;
	return p;
}

bool mpk__secret_at(const void *addr)
{
	struct mpk_region *r = mpk__region_lookup(addr);

	return r && __atomic_load_n(&r->secret, __ATOMIC_RELAXED);
}

bool mpk__domain_secretmem(const struct mpk_domain *d)
{
	return d->secretmem;
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
	pthread_mutex_lock(&d->lock);
	/* The tail apart (see mpk__map_fresh), or all live.  Under the core
	 * lock, which mpk_lockdown() holds while it installs its filter.
	 * Secret memory's tail is reserved memory, apart already. */
	size_t live = len, page = mpk_os_page_size();
	if (grows && len > page && (secret || mpk__tail_apart((char *)addr + page, len - page)))
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
		untag(d, addr, live, PROT_NONE);
		goto out;
	}
	r->cap = len;
	r->owned = true; /* only the heap maps fresh memory */
	r->secret = secret;
	mpk_os_name_region(addr, len, d->name);
	rc = 0;
out:
	return unlock_both(d, rc, err);
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

bool mpk__tail_apart(void *p, size_t n)
{
	return !__atomic_load_n(&mpk_os_locked, __ATOMIC_ACQUIRE) &&
	       !mpk_os_madvise(p, n, MADV_DODUMP);
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
	pthread_mutex_lock(&d->lock); /* d owns r: alive */
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
			untag(d, lo, n, PROT_NONE);
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
			mpk__tail_apart(lo, n);
			untag(d, lo, n, PROT_NONE);
			errno = err;
			goto out;
		}
		mpk__registry_set(r);
	}
	*live = r->len;
	rc = 0;
out:
	return unlock_both(d, rc, errno);
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
		   mpk__tail_apart((char *)addr + live, r->len - live)) {
		char *lo = (char *)addr + live;
		size_t n = r->len - live;
		mpk__region_resize(r, live);
		untag(d, lo, n, PROT_NONE);
		mpk__registry_set(r);
	}
	unlock_both(d, 0, 0);
}
