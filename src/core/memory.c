/* SPDX-License-Identifier: MIT */
/* Domain memory: mapping, unmapping and adopting page-granular regions
 * (the layers' owned regions that grow, shrink and move: owned.c). */
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
		mpk__lock(&d->lock);
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
		mpk__unlock(&d->lock);
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
		mpk__lock(&d->lock);
		mpk__region_del(r);
		mpk__unlock(&d->lock);
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

/* The end of an adopt or own: both locks go, errno says why it failed. */
int mpk__unlock_both(struct mpk_domain *d, int rc, int err)
{
	mpk__unlock(&d->lock);
	pthread_mutex_unlock(&mpk_g.lock);
	if (rc)
		errno = err;
	return rc;
}

/* A failed adopt or own: d's key (or its protection) off [addr, len),
 * which gets prot. */
void mpk__untag(const struct mpk_domain *d, void *addr, size_t len, int prot)
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
	mpk__lock(&d->lock);
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
		mpk__untag(d, addr, len, PROT_READ | PROT_WRITE);
		goto out;
	}
	mpk_os_name_region(addr, len, d->name);
	rc = 0;
out:
	return mpk__unlock_both(d, rc, err);
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
	mpk__lock(&d->lock);
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
	mpk__unlock(&d->lock);
	pthread_mutex_unlock(&mpk_g.lock);
	if (!p)
		errno = err;
	return p;
}
