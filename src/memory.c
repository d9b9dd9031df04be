/* SPDX-License-Identifier: MIT */
/* Domain memory: mapping, unmapping and adopting page-granular regions. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>

#include "internal.h"
#include "os.h"

/* Give a fresh mapping the domain's protection: its key (hw), or the
 * union of every thread's rights (soft). */
static int protect_new(struct mpk_domain *d, void *p, size_t len)
{
	if (d->key >= 0)
		return mpk_os_pkey_mprotect(p, len, PROT_READ | PROT_WRITE, d->key);
	if (d->prot == (PROT_READ | PROT_WRITE))
		return 0; /* already so */
	return mpk_os_mprotect(p, len, d->prot);
}

static void *alloc_region(struct mpk_domain *d, size_t len, bool owned)
{
	size_t page = mpk_os_page_size();
	struct mpk_region *r;
	void *p;

	if (mpk__ensure_init())
		return NULL;
	if (!mpk__domain_ok(d) || len == 0 || len > PTRDIFF_MAX - page) {
		errno = EINVAL;
		return NULL;
	}
	len = (len + page - 1) & ~(page - 1);
	pthread_mutex_lock(&mpk_g.lock);
	p = mpk_os_map_apart(len, PROT_READ | PROT_WRITE);
	if (!p)
		goto fail;
	if (protect_new(d, p, len) || !(r = mpk__region_add(d, p, len))) {
		int err = errno;
		mpk_os_unmap(p, len);
		errno = err;
		p = NULL;
		goto fail;
	}
	r->owned = owned;
	mpk_os_name_region(p, len, d->name);
fail:
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
	for (r = d->regions; r; r = r->next)
		if (r->start == (uintptr_t)addr && r->owned == owned)
			break;
	if (r) {
		size_t len = r->len;
		mpk__region_del(r);
		mpk_os_unmap(addr, len);
	}
	pthread_mutex_unlock(&mpk_g.lock);
	if (!r) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

MPK_EXPORT void *mpk_alloc(mpk_domain *d, size_t len)
{
	return alloc_region(d, len, false);
}

MPK_EXPORT int mpk_free(mpk_domain *d, void *addr)
{
	return free_region(d, addr, false);
}

void *mpk__alloc_owned(struct mpk_domain *d, size_t len)
{
	return alloc_region(d, len, true);
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
	for (r = d->regions; r; r = r->next)
		if (r->start == (uintptr_t)addr && r->owned)
			break;
	if (!r)
		errno = EINVAL;
	else if ((p = mpk_os_remap(addr, r->len, new_len))) {
		/* Unpublished while it changes, as the fault handler reads
		 * slots without the lock. */
		__atomic_store_n(&r->start, 0, __ATOMIC_RELEASE);
		r->len = new_len;
		__atomic_store_n(&r->start, (uintptr_t)p, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&mpk_g.lock);
	return p;
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
	pthread_mutex_lock(&mpk_g.lock);
	if (mpk__range_overlaps(addr, len))
		goto out;
	int anon = mpk_os_range_is_private_anon_rw(addr, len);
	if (anon <= 0) {
		err = anon < 0 ? errno : EINVAL;
		goto out;
	}
	if (protect_new(d, addr, len)) {
		err = errno;
		goto out;
	}
	if (!mpk__region_add(d, addr, len)) {
		err = errno;
		/* Undo: give the caller its memory back as it was. */
		if (d->key >= 0)
			mpk_os_pkey_mprotect(addr, len, PROT_READ | PROT_WRITE, 0);
		else
			mpk_os_mprotect(addr, len, PROT_READ | PROT_WRITE);
		goto out;
	}
	mpk_os_name_region(addr, len, d->name);
	rc = 0;
out:
	pthread_mutex_unlock(&mpk_g.lock);
	if (rc)
		errno = err;
	return rc;
}

int mpk__adopt_fresh(struct mpk_domain *d, void *addr, size_t len)
{
	int rc = -1, err = EINVAL;

	pthread_mutex_lock(&mpk_g.lock);
	if (!mpk__domain_ok(d))
		goto out;
	/* The caller mapped it: no /proc check, and it may be PROT_NONE, so
	 * the soft case always sets the protection. */
	if (d->key >= 0 ? mpk_os_pkey_mprotect(addr, len, PROT_READ | PROT_WRITE, d->key)
			: mpk_os_mprotect(addr, len, d->prot)) {
		err = errno;
		goto out;
	}
	struct mpk_region *r = mpk__region_add(d, addr, len);
	if (!r) {
		err = errno;
		/* PROT_NONE and no key: the caller unmaps it. */
		if (d->key >= 0)
			mpk_os_pkey_mprotect(addr, len, PROT_NONE, 0);
		else
			mpk_os_mprotect(addr, len, PROT_NONE);
		goto out;
	}
	r->owned = true; /* only the heap maps fresh memory */
	mpk_os_name_region(addr, len, d->name);
	rc = 0;
out:
	pthread_mutex_unlock(&mpk_g.lock);
	if (rc)
		errno = err;
	return rc;
}
