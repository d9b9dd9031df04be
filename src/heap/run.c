/* SPDX-License-Identifier: MIT */
/*
 * Chunks and page runs.  A chunk is a 1 MiB region of the heap's domain;
 * its pages form runs (free, a slab, or one large block), best fit of the
 * first few from free lists bucketed by log2 of the length, coalesced on
 * free.  Memory goes
 * back to the kernel as a heap shrinks, by decay: a free run's pages stay
 * resident for DECAY_MS after it was freed (a block that comes back soon
 * finds them; purging at once costs a page fault per page on reuse), then
 * the next free of a run purges them (MADV_DONTNEED); beyond a cap (half
 * the arena's memory, at least PURGE_CAP) the oldest go at once.  (A
 * quarter purged most of what a program frees in one go and builds again
 * at once, a tree dropped and the next one made: every page faulted back
 * in, peak RSS no lower.)
 * An idle chunk (nothing in use but empty slabs kept by bins) is unmapped
 * unless it is the one its arena keeps for the next growth.  Vault runs are
 * locked while in use, and unlocked and purged as soon as they are free; a
 * vault chunk's live part shrinks when less than half of it is in use, and
 * to a page when the chunk is idle (its empty slabs go too), so that what
 * stays locked with no secret in it is a small cache (VAULT_KEEP).
 * Callers hold the arena's lock.
 *
 * The owner table maps a page to the first page of its run exactly for runs
 * in use; a free run sets only its first and last pages (all that
 * coalescing reads), so freeing a long run does not write an entry per page.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/mman.h>
#include <time.h>

#include "heap.h"

#define PURGE_PAGES 256             /* dirty pages an arena keeps whatever their age */
#define PURGE_CAP ((size_t)8 << 20) /* bytes: past it and a quarter, purge at once */
#define DECAY_MS 250
#define FIT_SCAN 16                  /* runs that fit, looked at for the best */

static unsigned bucket(size_t pages)
{
	unsigned b = 63 - (unsigned)__builtin_clzll(pages); /* pages > 0 */

	return b < NBUCKETS ? b : NBUCKETS - 1;
}

static void set_owner(struct chunk *c, unsigned first, unsigned pages)
{
	for (unsigned i = 0; i < pages; i++)
		c->owner[first + i] = (uint16_t)first;
}

/* Milliseconds, coarse (a vDSO read, no system call), for the decay. */
static uint32_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint32_t)((uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000);
}

void mpk__free_insert(struct arena *a, struct chunk *c, struct run *r)
{
	struct run **head = &a->free_runs[bucket(r->pages)];

	r->kind = RUN_FREE;
	r->prev = NULL;
	r->next = *head;
	if (*head)
		(*head)->prev = r;
	*head = r;
	c->owner[r->page] = c->owner[r->page + r->pages - 1] = r->page;
	if (!r->clean)
		a->dirty_pages += r->pages;
}

void mpk__free_remove(struct arena *a, struct run *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		a->free_runs[bucket(r->pages)] = r->next;
	if (r->next)
		r->next->prev = r->prev;
	r->prev = r->next = NULL;
	if (!r->clean)
		a->dirty_pages -= r->pages;
}

/* A CHUNK_SIZE-aligned region of d (finding a block's chunk is then a
 * mask), carved from a reserved window: the reservation around it keeps
 * it apart from other mappings as mpk_alloc()'s regions are, and the
 * lockdown filter covers it.  NULL/errno. */
static void *chunk_map(struct heap *h)
{
	/* A vault's: memfd_secret where the kernel has it, live as pages
	 * are taken, so a soft open changes only those (core.h). */
	return mpk__map_fresh(h->domain, CHUNK_SIZE, CHUNK_SIZE, mpk__vault_region(h, true));
}

static void chunk_unmap(struct mpk_domain *d, void *base)
{
	mpk__san_forget((uintptr_t)base, CHUNK_SIZE);
	mpk__free_owned(d, base); /* reserved again, guards and all */
}

static struct chunk *chunk_new(struct arena *a)
{
	size_t page = mpk__page();
	struct mpk_domain *d = a->heap->domain;
	struct chunk *c;
	void *base = chunk_map(a->heap);
	int err;

	if (!base)
		return NULL;
	if (mpk__heap_headers(a->heap))
		mpk__san_poison((uintptr_t)base, CHUNK_SIZE); /* blocks open it */
	size_t live = CHUNK_SIZE;
	bool secret = false;
	if (mpk__vault_chunk(a->heap, base, &live, &secret)) {
		err = errno;
		goto unmap;
	}
	pthread_mutex_lock(&mpk__meta_lock);
	c = mpk__meta_alloc(sizeof(*c));
	if (c) {
		c->magic = CHUNK_MAGIC;
		c->base = (uintptr_t)base;
		c->heap = a->heap;
		c->arena = a;
		c->npages = (uint16_t)(CHUNK_SIZE / page);
		c->live = (uint16_t)(live / page);
		c->secret = secret;
		if (mpk__map_add(c)) {
			mpk__meta_free(c, sizeof(*c));
			c = NULL;
		}
	}
	err = errno;
	pthread_mutex_unlock(&mpk__meta_lock);
	if (!c)
		goto unmap;
	c->nfree = c->npages;
	c->next = a->chunks;
	if (a->chunks)
		a->chunks->prev = c;
	a->chunks = c;
	mpk__arena_mapped(a, CHUNK_SIZE, 0);
	/* A run's fields are set where a run starts (here, and where one is
	 * split off): the table's other entries stay untouched, and so do
	 * most of its 26 KiB of pages in a chunk little used. */
	struct run *r = &c->runs[0];
	r->chunk = c;
	r->page = 0;
	r->pages = c->npages;
	r->clean = 1;
	mpk__free_insert(a, c, r);
	a->empty_chunks++;
	return c;
unmap:
	chunk_unmap(d, base);
	errno = err;
	return NULL;
}

/* Give an idle chunk back: its free runs leave their lists, its empty
 * slabs their bins.  It is not counted in a->empty_chunks. */
static void chunk_release(struct arena *a, struct chunk *c)
{
	void *base = (void *)c->base;

	for (unsigned pg = 0; pg < c->npages; pg += c->runs[pg].pages) {
		struct run *r = &c->runs[pg];
		if (r->kind == RUN_FREE)
			mpk__free_remove(a, r);
		else if (r->kind == RUN_SLAB && r->spare)
			a->bins[r->cls].spare = NULL;
	}
	mpk__vault_unlock(a->heap, base, CHUNK_SIZE); /* the empty slabs' pages */
	if (c->prev)
		c->prev->next = c->next;
	else
		a->chunks = c->next;
	if (c->next)
		c->next->prev = c->prev;
	mpk__arena_mapped(a, 0, CHUNK_SIZE);
	pthread_mutex_lock(&mpk__meta_lock);
	mpk__map_del(c);
	mpk__meta_free(c, sizeof(*c));
	pthread_mutex_unlock(&mpk__meta_lock);
	chunk_unmap(a->heap->domain, base);
}

static void purge_run(struct arena *a, struct run *r)
{
	/* memfd_secret pages stay in their file until it is unmapped. */
	if (!a->heap->kexcl)
		mpk_os_madvise((void *)run_addr(r->chunk, r),
			       (size_t)r->pages << mpk__heap_page_shift, MADV_DONTNEED);
	r->clean = 1;
	a->dirty_pages -= r->pages;
}

/* Past the cap: the runs freed longest ago (list tails), largest first,
 * until half the cap is left. */
static void purge_to(struct arena *a, size_t keep)
{
	for (unsigned b = NBUCKETS; b-- > 0 && a->dirty_pages > keep;) {
		struct run *r = a->free_runs[b];
		while (r && r->next)
			r = r->next;
		for (; r && a->dirty_pages > keep; r = r->prev)
			if (!r->clean)
				purge_run(a, r);
	}
}

/* A run was freed at now: purge what has been dirty for DECAY_MS, and
 * note when the oldest left will be. */
static void decay(struct arena *a, uint32_t now)
{
	size_t cap = a->mapped / 2 > PURGE_CAP ? a->mapped / 2 : PURGE_CAP;

	cap >>= mpk__heap_page_shift;
	if (a->dirty_pages > cap) {
		purge_to(a, cap / 2);
		return;
	}
	if (a->dirty_pages <= PURGE_PAGES || (a->decay_at && (int32_t)(now - a->decay_at) < 0))
		return;
	uint32_t next = now + DECAY_MS;
	for (unsigned b = 0; b < NBUCKETS; b++)
		for (struct run *r = a->free_runs[b]; r; r = r->next) {
			if (r->clean)
				continue;
			if ((int32_t)(now - r->freed) >= DECAY_MS)
				purge_run(a, r);
			else if ((int32_t)(r->freed + DECAY_MS - next) < 0)
				next = r->freed + DECAY_MS;
		}
	a->decay_at = next;
}

bool mpk__run_grow(struct arena *a, struct chunk *c, struct run *r, size_t pages)
{
	unsigned end = r->page + r->pages;
	size_t extra = pages - r->pages;

	if (pages <= r->pages)
		return true;
	if (end >= c->npages || mpk__vault(a->heap))
		return false; /* vault runs would need locking too */
	struct run *n = &c->runs[end];
	if (n->kind != RUN_FREE || n->pages < extra)
		return false;
	mpk__free_remove(a, n);
	if (n->pages > extra) {
		struct run *t = &c->runs[end + extra];
		t->chunk = c;
		t->page = (uint16_t)(end + extra);
		t->pages = (uint16_t)(n->pages - extra);
		t->clean = n->clean;
		t->freed = n->freed;
		mpk__free_insert(a, c, t);
	}
	n->kind = RUN_NONE;
	c->nfree = (uint16_t)(c->nfree - extra);
	r->pages = (uint16_t)pages;
	set_owner(c, r->page, r->pages);
	return true;
}

struct run *mpk__run_alloc(struct arena *a, size_t pages, struct chunk **cp)
{
	struct run *r = NULL;
	struct chunk *c;

	/* In the lowest bucket that has a run that fits, the best fit of it
	 * and the next FIT_SCAN (first fit left many holes too short for
	 * anything between runs, resident until they decay). */
	for (unsigned b = bucket(pages); b < NBUCKETS && !r; b++) {
		unsigned more = FIT_SCAN;
		for (struct run *x = a->free_runs[b]; x && (!r || more--); x = x->next)
			if (x->pages >= pages && (!r || x->pages < r->pages)) {
				r = x;
				if (x->pages == pages)
					break;
			}
	}
	if (r) {
		c = r->chunk;
	} else {
		if (!(c = chunk_new(a)))
			return NULL;
		r = &c->runs[0];
	}
	if (mpk__chunk_idle(c))
		a->empty_chunks--;
	mpk__free_remove(a, r);
	if (r->pages > pages) {
		struct run *tail = &c->runs[r->page + pages];
		tail->chunk = c;
		tail->page = (uint16_t)(r->page + pages);
		tail->pages = (uint16_t)(r->pages - pages);
		tail->clean = r->clean;
		tail->freed = r->freed;
		mpk__free_insert(a, c, tail);
		r->pages = (uint16_t)pages;
	}
	c->nfree = (uint16_t)(c->nfree - pages);
	set_owner(c, r->page, r->pages);
	r->kind = RUN_NONE;
	r->spare = 0;
	if (mpk__vault_run_take(a, c, r))
		return NULL;
	*cp = c;
	return r;
}

uint64_t mpk__runs_epoch;

void mpk__runs_moved(void)
{
	__atomic_add_fetch(&mpk__runs_epoch, 1, __ATOMIC_RELEASE);
}

void mpk__run_free(struct arena *a, struct chunk *c, struct run *r)
{
	uint32_t now = now_ms();

	mpk__runs_moved();
	mpk__vault_run_give(a, c, r);
	c->nfree = (uint16_t)(c->nfree + r->pages);
	r->freed = now; /* merged runs take the newest time */
	if (r->page > 0) {
		struct run *p = &c->runs[c->owner[r->page - 1]];
		if (p->kind == RUN_FREE) {
			mpk__free_remove(a, p);
			p->pages = (uint16_t)(p->pages + r->pages);
			p->clean &= r->clean;
			p->freed = now;
			r->kind = RUN_NONE;
			r = p;
		}
	}
	if (r->page + r->pages < c->npages) {
		struct run *n = &c->runs[r->page + r->pages];
		if (n->kind == RUN_FREE) {
			mpk__free_remove(a, n);
			r->pages = (uint16_t)(r->pages + n->pages);
			r->clean &= n->clean;
			n->kind = RUN_NONE;
		}
	}
	mpk__free_insert(a, c, r);
	bool idle = mpk__chunk_idle(c);
	if (idle) {
		if (a->empty_chunks) {
			chunk_release(a, c); /* one idle chunk is enough */
			return;
		}
		a->empty_chunks++;
	}
	mpk__vault_trim(a, c, idle);
	decay(a, now);
}

void mpk__chunks_release(struct arena *a)
{
	mpk__runs_moved();
	while (a->chunks) {
		struct chunk *c = a->chunks;
		mpk__vault_unlock(a->heap, (void *)c->base, CHUNK_SIZE);
		a->chunks = c->next;
		pthread_mutex_lock(&mpk__meta_lock);
		mpk__map_del(c);
		void *base = (void *)c->base;
		mpk__meta_free(c, sizeof(*c));
		pthread_mutex_unlock(&mpk__meta_lock);
		chunk_unmap(a->heap->domain, base);
	}
	a->mapped = 0;
}

