/* SPDX-License-Identifier: MIT */
/*
 * Soft protection: a domain without a hardware key is protected with
 * mprotect().  Page protections are process-wide, so a region is as open as
 * the most any thread holds (the union).  Each thread remembers its own
 * rights in a thread-local table indexed by domain slot; an entry counts only
 * while its uid matches the domain in that slot, so a recycled slot never
 * inherits rights.  Threads that exit drop what they held.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"
#include "os.h"

struct held {
	uint64_t uid;
	int rights;
};

/* initial-exec: the fault handler reads these in signal context. */
static __thread struct held *t_held __attribute__((tls_model("initial-exec")));
static __thread uint32_t t_cap __attribute__((tls_model("initial-exec")));

static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

static int prot_of(int readers, int writers)
{
	if (writers)
		return PROT_READ | PROT_WRITE;
	return readers ? PROT_READ : PROT_NONE;
}

int mpk__soft_prot(const struct mpk_domain *d)
{
	return prot_of(d->readers, d->writers);
}

int mpk__soft_get(const struct mpk_domain *d)
{
	if (d->slot < t_cap && t_held[d->slot].uid == d->uid)
		return t_held[d->slot].rights;
	return MPK_NONE;
}

/* mprotect every region to prot; on failure put back those already done. */
static int apply(struct mpk_domain *d, int prot)
{
	struct mpk_region *r, *done;

	if (prot == d->prot)
		return 0;
	for (r = d->regions; r; r = r->next)
		if (mpk_os_mprotect((void *)r->start, r->len, prot))
			goto undo;
	d->prot = prot;
	return 0;
undo:;
	int err = errno;
	for (done = d->regions; done != r; done = done->next)
		mpk_os_mprotect((void *)done->start, done->len, d->prot);
	errno = err;
	return -1;
}

static void count(struct mpk_domain *d, int rights, int delta)
{
	if (rights == MPK_RW)
		d->writers += delta;
	else if (rights == MPK_READ)
		d->readers += delta;
}

static void thread_exit(void *arg);

static void make_exit_key(void)
{
	pthread_key_create(&exit_key, thread_exit);
}

/* Room for slot in this thread's table. */
static int reserve(uint32_t slot)
{
	if (slot < t_cap)
		return 0;
	uint32_t cap = t_cap ? t_cap : 16;
	while (cap <= slot)
		cap *= 2;
	struct held *n = calloc(cap, sizeof(*n));
	if (!n)
		return -1;
	if (t_held)
		memcpy(n, t_held, t_cap * sizeof(*n));
	struct held *old = t_held;
	/* Publish the larger table before freeing the old one: the fault
	 * handler may read t_held at any moment on this thread. */
	__atomic_store_n(&t_held, n, __ATOMIC_RELEASE);
	__atomic_store_n(&t_cap, cap, __ATOMIC_RELEASE);
	free(old);
	pthread_once(&exit_once, make_exit_key);
	pthread_setspecific(exit_key, (void *)1);
	return 0;
}

int mpk__soft_set_locked(struct mpk_domain *d, int rights)
{
	int old = mpk__soft_get(d);

	if (old == rights)
		return 0;
	if (reserve(d->slot))
		return -1;
	count(d, old, -1);
	count(d, rights, +1);
	if (apply(d, mpk__soft_prot(d))) {
		count(d, rights, -1);
		count(d, old, +1);
		return -1;
	}
	t_held[d->slot] = (struct held){ .uid = d->uid, .rights = rights };
	return 0;
}

void mpk__soft_forget(struct mpk_domain *d)
{
	/* Other threads' entries die with the uid; only the counts go. */
	if (d->slot < t_cap && t_held[d->slot].uid == d->uid)
		t_held[d->slot].rights = MPK_NONE;
	d->readers = d->writers = 0;
}

static void thread_exit(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mpk_g.lock);
	for (uint32_t s = 0; s < t_cap; s++) {
		struct held *h = &t_held[s];
		if (h->rights == MPK_NONE || s >= mpk_g.nslots)
			continue;
		struct mpk_domain *d = mpk_g.slots[s];
		if (d && d->uid == h->uid) {
			count(d, h->rights, -1);
			/* If this fails the region stays more open than
			 * needed, never less: nobody loses access. */
			apply(d, mpk__soft_prot(d));
		}
	}
	pthread_mutex_unlock(&mpk_g.lock);
	struct held *old = t_held;
	t_cap = 0;
	t_held = NULL;
	free(old);
}
