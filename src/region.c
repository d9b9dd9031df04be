/* SPDX-License-Identifier: MIT */
/*
 * The region table: which mappings belong to which domain.  Writers hold
 * mpk_g.lock; the fault handler reads without a lock, which is why slots
 * live in chunks that are never freed and a slot's start is published last.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

#include "internal.h"
#include "os.h"
#include "registry.h"

#define CHUNK_SLOTS 128

struct chunk {
	struct mpk_region slot[CHUNK_SLOTS];
	struct chunk *next; /* published with release */
};

static struct chunk *chunks;

static struct mpk_region *free_slot(void)
{
	struct chunk *c;

	for (c = chunks; c; c = c->next)
		for (int i = 0; i < CHUNK_SLOTS; i++)
			if (!c->slot[i].start)
				return &c->slot[i];
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->next = chunks;
	__atomic_store_n(&chunks, c, __ATOMIC_RELEASE);
	return &c->slot[0];
}

struct mpk_region *mpk__region_add(struct mpk_domain *d, void *start, size_t len)
{
	struct mpk_region *r = free_slot();

	if (!r) {
		errno = ENOMEM;
		return NULL;
	}
	r->len = len;
	r->domain = d;
	r->owned = false;
	r->next = d->regions;
	d->regions = r;
	__atomic_store_n(&r->start, (uintptr_t)start, __ATOMIC_RELEASE);
	mpk__registry_add((uintptr_t)start, len, d->name);
	return r;
}

void mpk__region_del(struct mpk_region *r)
{
	struct mpk_region **pp = &r->domain->regions;

	while (*pp != r)
		pp = &(*pp)->next;
	*pp = r->next;
	mpk__registry_del(r->start);
	__atomic_store_n(&r->start, 0, __ATOMIC_RELEASE);
	r->next = NULL;
}

struct mpk_region *mpk__region_lookup(const void *addr)
{
	uintptr_t a = (uintptr_t)addr;

	for (struct chunk *c = __atomic_load_n(&chunks, __ATOMIC_ACQUIRE); c;
	     c = c->next)
		for (int i = 0; i < CHUNK_SLOTS; i++) {
			struct mpk_region *r = &c->slot[i];
			uintptr_t s = __atomic_load_n(&r->start, __ATOMIC_ACQUIRE);
			if (s && a >= s && a - s < r->len)
				return r;
		}
	return NULL;
}

bool mpk__range_overlaps(const void *addr, size_t len)
{
	uintptr_t lo = (uintptr_t)addr, hi = lo + len;

	for (struct chunk *c = chunks; c; c = c->next)
		for (int i = 0; i < CHUNK_SLOTS; i++) {
			uintptr_t s = c->slot[i].start;
			if (s && s < hi && lo < s + c->slot[i].len)
				return true;
		}
	return false;
}

void mpk__domain_unmap_all(struct mpk_domain *d)
{
	while (d->regions) {
		struct mpk_region *r = d->regions;
		void *start = (void *)r->start;
		size_t len = r->len;
		mpk__region_del(r);
		mpk_os_unmap(start, len);
	}
}

MPK_EXPORT mpk_domain *mpk_domain_of(const void *addr)
{
	struct mpk_region *r;
	mpk_domain *d = NULL;

	if (!mpk__ensure_init()) {
		pthread_mutex_lock(&mpk_g.lock);
		r = mpk__region_lookup(addr);
		if (r)
			d = r->domain;
		pthread_mutex_unlock(&mpk_g.lock);
		if (!d)
			errno = ENOENT;
	}
	return d;
}
