/* SPDX-License-Identifier: MIT */
/* Domains: creation, destruction and the keys they hold. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"
#include "os.h"

/* Destroyed domains stay readable (magic DEAD) for this many later
 * destructions, so a double destroy is caught rather than corrupting. */
#define QUARANTINE 256

static bool name_ok(const char *name)
{
	size_t n = 0;

	if (!name)
		return false;
	for (; name[n]; n++)
		if (n >= MPK_NAME_MAX || name[n] < 0x20 || name[n] > 0x7e)
			return false;
	return n > 0;
}

static int slot_take(struct mpk_domain *d)
{
	for (uint32_t s = 0; s < mpk_g.nslots; s++)
		if (!mpk_g.slots[s]) {
			d->slot = s;
			mpk_g.slots[s] = d;
			return 0;
		}
	if (mpk_g.nslots == mpk_g.cap_slots) {
		uint32_t cap = mpk_g.cap_slots ? 2 * mpk_g.cap_slots : 64;
		void *n = mpk__irealloc(mpk_g.slots, cap * sizeof(*mpk_g.slots));
		if (!n)
			return -1;
		mpk_g.slots = n;
		mpk_g.cap_slots = cap;
	}
	d->slot = mpk_g.nslots++;
	mpk_g.slots[d->slot] = d;
	return 0;
}

/*
 * Close key k in every thread: 0 when every thread that could hold it open
 * was reached.  io_uring's kernel threads cannot be (they run no user
 * code, and one born while k was open, an SQPOLL thread, keeps k open:
 * t_pit_io_uring_sqpoll); while any exists, k is not fit to go to another
 * domain, and this fails with EBUSY.
 */
static int key_revoke(int k)
{
	if (mpk__broadcast(mpk_arch_key_mask(k), mpk_arch_key_bits(k, MPK_NONE)))
		return -1;
	if (mpk__broadcast_io_threads()) {
		errno = EBUSY;
		return -1;
	}
	return 0;
}

/*
 * A key for a new domain, closed in every thread: one held spare (its
 * revocation is retried now; *spare set), or a new one from the kernel
 * within the budget.
 */
static int key_take(bool *spare)
{
	*spare = true;
	for (int k = 1; k < MPK_ARCH_NKEYS; k++)
		if (mpk_g.key_spare[k] && !key_revoke(k)) {
			mpk_g.key_spare[k] = false;
			return k;
		}
	*spare = false;
	if (mpk_g.keys_held >= mpk_g.budget) {
		errno = ENOSPC;
		return -1;
	}
	/* pkey_alloc(0, 0) opens the new key in this thread only (the caller
	 * then sets the rights asked for); other threads keep their PKRU
	 * bits, closed unless someone left them open, and mpkit revokes
	 * every key it gives back (key_put). */
	int key = mpk_os_pkey_alloc(0, 0);
	if (key < 0) {
		/* ENOSPC when the kernel has none left; EPERM once
		 * mpk_lockdown(MPK_LOCK_FREEZE_KEYS) froze them: none either */
		if (errno == EPERM)
			errno = ENOSPC;
		return -1;
	}
	if (key >= MPK_ARCH_NKEYS) { /* cannot happen on x86; be safe */
		mpk_os_pkey_free(key);
		errno = ENOSPC;
		return -1;
	}
	mpk_g.keys_held++;
	return key;
}

/*
 * Give a key back: close it in every thread first, so whoever gets it next
 * (this library or the application) inherits no rights.  A thread the
 * revocation could not reach (io_uring's kernel threads among them) keeps
 * the key out of circulation: mpkit holds it as a spare (mpk_info() counts
 * it in keys_in_use) and retries before reusing it.
 */
static void key_put(int key)
{
	if (key_revoke(key)) {
		mpk_g.key_spare[key] = true;
		return;
	}
	if (mpk_os_pkey_free(key)) {
		/* keys frozen by mpk_lockdown(): keep it, closed, for reuse */
		mpk_g.key_spare[key] = true;
		return;
	}
	mpk_g.keys_held--;
}

void mpk__fast_publish(struct mpk_domain *d, int k)
{
	if (k < 0)
		for (int r = 0; r < 4; r++)
			__atomic_store_n(&d->fast[r], 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&d->key, k, __ATOMIC_SEQ_CST);
	if (k >= 0)
		for (int r = 0; r < 4; r++)
			__atomic_store_n(&d->fast[r], mpk__rights_ok(r) ? mpk_arch_fast_word(k, r) : 0,
					 __ATOMIC_RELEASE);
}

/* ---- virtual domains: keys are a cache (docs/virtual-domains.md) ---- */

struct evict_arg {
	struct mpk_domain *a;
	int key, rights;
	bool failed; /* some thread could not record its rights; atomic */
};

/* In each thread (signal context) and the caller: hold ea->rights to the
 * now keyless domain, and close its old key. */
static mpk_reg_t evict_hold(const void *arg)
{
	struct evict_arg *ea = (struct evict_arg *)arg;

	if (!mpk__soft_hold_signal(ea->a, ea->rights))
		__atomic_store_n(&ea->failed, true, __ATOMIC_RELEASE);
	return mpk_arch_key_bits(ea->key, MPK_NONE);
}

/*
 * Evict a from its key k, exactly: unpublish the key (later calls on a take
 * the slow path and wait for the lock), collect every thread's bits for k
 * (the broadcast also rewinds a thread caught inside its restartable
 * sequence, which then sees no key); only if all threads hold the same
 * rights r, move a's pages to key 0 with protection r, and close k
 * everywhere, each thread recording that it holds r to a (soft.c).  Returns k, held with no owner and closed
 * in every thread, or -1 with a unchanged (or, if only the final close
 * failed, soft and k kept as a spare).
 */
static int evict(struct mpk_domain *a)
{
	int k = a->key;
	mpk_reg_t mask = mpk_arch_key_mask(k);
	struct mpk_bcast b = { 0 };
	struct mpk_region *r, *done;

	int rights;

	mpk__soft_evict_prepare();
	mpk__fast_publish(a, -1);
	/* Same rights, not the same bits: a thread a revocation skipped
	 * (closed already) may hold AD alone where others hold AD|WD.  An
	 * io_uring kernel thread's bits for k are unknown and stay: k cannot
	 * move to another domain while one exists. */
	if (mpk__broadcast_ex(&b) || !mpk_arch_same_rights(b.seen_and, b.seen_or, k, &rights) ||
	    mpk__broadcast_io_threads())
		goto keep;
	int prot = mpk__prot_of_rights(rights);
	for (r = a->regions; r; r = r->next)
		if (mpk_os_pkey_mprotect((void *)r->start, r->len, mpk__region_prot(r, prot, 0), 0))
			goto undo;
	mpk__soft_evicted(a, rights);
	mpk__registry_sync(a);
	mpk_g.key_owner[k] = NULL;
	/* Closing k, every thread records that it holds rights to a now,
	 * so that the protection follows their later changes exactly. */
	struct evict_arg ea = { .a = a, .key = k, .rights = rights };
	struct mpk_bcast close = { .clear = mask, .fn = evict_hold, .arg = &ea };
	int rc = mpk__broadcast_ex(&close);
	if (rc || __atomic_load_n(&ea.failed, __ATOMIC_ACQUIRE))
		mpk__soft_evicted_loose(a, rights);
	if (rc) {
		mpk_g.key_spare[k] = true; /* revoked before any reuse */
		return -1;
	}
	return k;
undo:
	for (done = a->regions; done != r; done = done->next)
		mpk_os_pkey_mprotect((void *)done->start, done->len,
				     mpk__region_prot(done, PROT_READ | PROT_WRITE, k), k);
keep:
	mpk__fast_publish(a, k);
	return -1;
}

struct rekey_arg {
	const struct mpk_domain *d;
	int key;
};

/* In each thread (signal context): its own rights to the keyless domain. */
static mpk_reg_t rekey_bits(const void *arg)
{
	const struct rekey_arg *a = arg;
	return mpk_arch_key_bits(a->key, mpk__soft_get(a->d));
}

/*
 * Give keyless d key k (held, no owner): first every thread's bits for k
 * become that thread's rights to d, then d's pages move to k with RW.  On
 * failure d stays soft and intact, and k becomes a spare.
 */
static int rekey(struct mpk_domain *d, int k)
{
	struct rekey_arg arg = { d, k };
	struct mpk_bcast b = { .clear = mpk_arch_key_mask(k), .fn = rekey_bits, .arg = &arg };
	struct mpk_region *r, *done;

	if (mpk__broadcast_ex(&b))
		goto spare;
	for (r = d->regions; r; r = r->next)
		if (mpk_os_pkey_mprotect((void *)r->start, r->len,
					 mpk__region_prot(r, PROT_READ | PROT_WRITE, k), k))
			goto undo;
	mpk__soft_keyed(d);
	mpk_g.key_owner[k] = d;
	mpk__fast_publish(d, k);
	mpk__registry_sync(d);
	return 0;
undo:
	for (done = d->regions; done != r; done = done->next)
		mpk_os_pkey_mprotect((void *)done->start, done->len, mpk__region_prot(done, d->prot, 0), 0);
spare:
	mpk_g.key_spare[k] = true;
	return -1;
}

/* Whether c is a better victim than v: closed in every thread (the fast
 * path stamps no LRU word; a key nobody holds open is the one not in use,
 * and the one an exact eviction can move), then least recently used. */
static bool better_victim(const struct mpk_domain *c, const struct mpk_domain *v, mpk_reg_t open)
{
	bool c_open = open >> (2 * c->key) & 1, v_open = open >> (2 * v->key) & 1;
	if (c_open != v_open)
		return !c_open;
	return __atomic_load_n(&c->lru, __ATOMIC_RELAXED) < __atomic_load_n(&v->lru, __ATOMIC_RELAXED);
}

/* Evict the best victim that can go exactly (never d, never a pinned
 * one): its key, held with no owner and closed everywhere, or -1. */
static int evict_lru(const struct mpk_domain *d)
{
	bool tried[MPK_ARCH_NKEYS ? MPK_ARCH_NKEYS : 1] = { false };
	mpk_reg_t open = mpk__threads_open();

	for (;;) {
		struct mpk_domain *v = NULL;
		for (int i = 1; i < MPK_ARCH_NKEYS; i++) {
			struct mpk_domain *c = mpk_g.key_owner[i];
			if (c && c != d && !tried[i] && c->key == i && !c->pinned && !c->sealed &&
			    (!v || better_victim(c, v, open)))
				v = c;
		}
		if (!v)
			return -1;
		tried[v->key] = true;
		int k = evict(v);
		if (k >= 0)
			return k;
	}
}

/* A key taken for a call that then failed: a spare goes back to the
 * spares, a key new from the kernel back to the kernel (revoked first),
 * so that the keys held are as before the call. */
static void key_untake(int k, bool spare)
{
	if (spare) {
		mpk_g.key_spare[k] = true; /* revoked again before any reuse */
		return;
	}
	mpk_g.key_spare[k] = false;
	key_put(k);
}

int mpk__key_acquire(struct mpk_domain *d)
{
	bool spare;
	int k = key_take(&spare);

	if (k < 0 && errno == ENOSPC) {
		k = evict_lru(d); /* d's own rights never move */
		spare = true;     /* held already: it stays held */
	}
	if (k < 0)
		return -1;
	if (rekey(d, k)) {
		key_untake(k, spare);
		return -1;
	}
	return 0;
}

int mpk__domain_pin(mpk_domain *d, bool on)
{
	pthread_mutex_lock(&mpk_g.lock);
	d->pinned = on;
	int k = d->key;
	pthread_mutex_unlock(&mpk_g.lock);
	return k;
}

int mpk__key_give_back(void)
{
	int k;

	for (k = 1; k < MPK_ARCH_NKEYS; k++)
		if (mpk_g.key_spare[k] && !key_revoke(k)) {
			mpk_g.key_spare[k] = false;
			break;
		}
	if (k == MPK_ARCH_NKEYS && (k = evict_lru(NULL)) < 0) {
		errno = ENOSPC;
		return -1;
	}
	/* Held, no owner, closed in every thread: the kernel's again. */
	mpk_os_pkey_free(k);
	mpk_g.keys_held--;
	return 0;
}

int mpk__key_take_spare(void)
{
	int k = mpk_os_pkey_alloc(0, 0);

	if (k < 0)
		return -1;
	if (k >= MPK_ARCH_NKEYS) {
		mpk_os_pkey_free(k);
		errno = ENOSPC;
		return -1;
	}
	/* pkey_alloc() opened it in this thread: closed, as spares are. */
	mpk_reg_t old = mpk_arch_reg_update(mpk_arch_key_mask(k), mpk_arch_key_bits(k, MPK_NONE));
	mpk__pub_wrote((old & ~mpk_arch_key_mask(k)) | mpk_arch_key_bits(k, MPK_NONE));
	mpk_g.key_spare[k] = true;
	mpk_g.keys_held++;
	return 0;
}

MPK_EXPORT mpk_domain *mpk_domain_create(const char *name, int rights, unsigned flags)
{
	struct mpk_domain *d;
	bool spare = false;
	int err;

	if (mpk__ensure_init())
		return NULL;
	if (!name_ok(name) || !mpk__rights_ok(rights) ||
	    (flags & ~(unsigned)(MPK_DOMAIN_SHARED | MPK_DOMAIN_SECRETMEM))) {
		errno = EINVAL;
		return NULL;
	}
	/* Asked for memory the kernel cannot read: said now, not at the
	 * first allocation. */
	if ((flags & MPK_DOMAIN_SECRETMEM) && mpk__secretmem_probe()) {
		errno = (errno == EMFILE || errno == ENFILE || errno == ENOMEM) ? errno : EOPNOTSUPP;
		return NULL;
	}
	d = mpk__ialloc(sizeof(*d));
	if (!d) {
		errno = ENOMEM;
		return NULL;
	}
	strcpy(d->name, name);
	d->lock = (struct mpk_lock){ 0 };
	d->key = -1;
	d->prot = PROT_NONE;
	d->secretmem = flags & MPK_DOMAIN_SECRETMEM;
	pthread_mutex_lock(&mpk_g.lock);
	if (slot_take(d)) {
		err = ENOMEM;
		goto fail;
	}
	if (mpk_g.backend == MPK_BACKEND_HW) {
		d->key = key_take(&spare);
		if (d->key < 0 && errno != ENOSPC) {
			err = errno;
			mpk_g.slots[d->slot] = NULL;
			goto fail;
		}
	}
	if (d->key >= 0) {
		mpk_g.key_owner[d->key] = d;
		if (!(flags & MPK_DOMAIN_SHARED)) {
			mpk_reg_t old = mpk_arch_reg_update(mpk_arch_key_mask(d->key),
							    mpk_arch_key_bits(d->key, rights));
			mpk__pub_wrote((old & ~mpk_arch_key_mask(d->key)) |
				      mpk_arch_key_bits(d->key, rights));
		} else if (mpk__broadcast(mpk_arch_key_mask(d->key),
				  mpk_arch_key_bits(d->key, rights))) {
			/* Every thread or none: close it again, give it back. */
			err = EAGAIN;
			mpk_g.key_owner[d->key] = NULL;
			key_untake(d->key, spare);
			mpk_g.slots[d->slot] = NULL;
			goto fail;
		}
	}
	if (d->key >= 0)
		mpk__fast_publish(d, d->key);
	d->uid = mpk_g.next_uid++;
	d->magic = MPK_DOMAIN_MAGIC;
	if (d->key < 0 && ((flags & MPK_DOMAIN_SHARED) ? mpk__soft_set_all_locked(d, rights)
						       : mpk__soft_set_locked(d, rights))) {
		/* Cannot fail without regions, but keep the contract. */
		err = errno;
		mpk_g.slots[d->slot] = NULL;
		goto fail;
	}
	mpk_g.ndomains++;
	d->lru = ++mpk_g.tick;
	/* No key free: a keyless domain, which tries to win one (evicting)
	 * when rights are taken; the creator's rights already count. */
	if (d->key < 0 && mpk_g.backend == MPK_BACKEND_HW && rights != MPK_NONE)
		mpk__key_acquire(d);
	pthread_mutex_unlock(&mpk_g.lock);
	return d;
fail:
	pthread_mutex_unlock(&mpk_g.lock);
	mpk__ifree(d);
	errno = err;
	return NULL;
}

static void quarantine(struct mpk_domain *d)
{
	d->magic = MPK_DOMAIN_DEAD;
	d->dead_next = NULL;
	if (mpk_g.dead_tail)
		mpk_g.dead_tail->dead_next = d;
	else
		mpk_g.dead_head = d;
	mpk_g.dead_tail = d;
	if (++mpk_g.ndead > QUARANTINE) {
		struct mpk_domain *old = mpk_g.dead_head;
		mpk_g.dead_head = old->dead_next;
		mpk_g.ndead--;
		mpk__ifree(old);
	}
}

int (*mpk__domain_detach)(struct mpk_domain *d);

int mpk__domain_hold(struct mpk_domain *d)
{
	int rc = 0;

	pthread_mutex_lock(&mpk_g.lock);
	if (mpk__domain_ok(d))
		d->holds++;
	else
		rc = -1;
	pthread_mutex_unlock(&mpk_g.lock);
	if (rc)
		errno = EINVAL;
	return rc;
}

int mpk__domain_holds(struct mpk_domain *d)
{
	pthread_mutex_lock(&mpk_g.lock);
	int n = mpk__domain_ok(d) ? d->holds : 0;
	pthread_mutex_unlock(&mpk_g.lock);
	return n;
}

void mpk__domain_unhold(struct mpk_domain *d)
{
	pthread_mutex_lock(&mpk_g.lock);
	d->holds--;
	pthread_mutex_unlock(&mpk_g.lock);
}

MPK_EXPORT int mpk_domain_destroy(mpk_domain *d)
{
	if (mpk__ensure_init())
		return -1;
	/* Outside the lock: the layer above frees memory of d through the
	 * public calls, which take it. */
	int (*detach)(struct mpk_domain *) = __atomic_load_n(&mpk__domain_detach, __ATOMIC_ACQUIRE);
	if (detach && mpk__domain_ok(d) && detach(d))
		return -1;
	pthread_mutex_lock(&mpk_g.lock);
	if (!mpk__domain_ok(d) || d->holds) {
		int err = mpk__domain_ok(d) ? EBUSY : EINVAL;
		pthread_mutex_unlock(&mpk_g.lock);
		errno = err;
		return -1;
	}
	/* Memory first: no page may carry the key once it is released.
	 * Under d's lock too: a soft rights change holds only that, and
	 * finds d dead once it gets it. */
	mpk__lock(&d->lock);
	mpk__domain_unmap_all(d);
	if (d->key >= 0) {
		int k = d->key;
		mpk_g.key_owner[k] = NULL;
		/* Unpublished before the revocation: a thread still inside a
		 * rights change on d (a use after destroy) loads 0 after it. */
		mpk__fast_publish(d, -1);
		key_put(k);
	} else {
		mpk__soft_forget(d);
	}
	mpk_g.slots[d->slot] = NULL;
	mpk_g.ndomains--;
	quarantine(d); /* marks d dead; frees only older ones */
	mpk__unlock(&d->lock);
	pthread_mutex_unlock(&mpk_g.lock);
	return 0;
}

MPK_EXPORT const char *mpk_domain_name(const mpk_domain *d)
{
	if (!mpk__domain_ok(d)) {
		errno = EINVAL;
		return NULL;
	}
	return d->name;
}

MPK_EXPORT int mpk_domain_key(const mpk_domain *d)
{
	if (!mpk__domain_ok(d)) {
		errno = EINVAL;
		return -1;
	}
	if (d->key < 0) {
		errno = ENOENT;
		return -1;
	}
	return d->key;
}

struct mpk_domain *mpk__domain_by_key(int key)
{
	if (key < 0 || key >= MPK_ARCH_NKEYS)
		return NULL;
	return __atomic_load_n(&mpk_g.key_owner[key], __ATOMIC_ACQUIRE);
}

/* mpk__lock() found the lock held: mark it waited for, and sleep until
 * it is free (a private futex, as glibc's mutex). */
void mpk__lock_wait(struct mpk_lock *l)
{
	while (__atomic_exchange_n(&l->word, 2, __ATOMIC_ACQUIRE))
		mpk_os_futex_wait(&l->word, 2, 100000000); /* 0.1 s: woken before */
}

void mpk__lock_wake(struct mpk_lock *l)
{
	mpk_os_futex_wake(&l->word);
}
