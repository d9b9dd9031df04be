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
		void *n = realloc(mpk_g.slots, cap * sizeof(*mpk_g.slots));
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
 * A key for a new domain, closed in every thread: one held spare (its
 * revocation is retried now), or a new one from the kernel within the budget.
 */
static int key_take(void)
{
	for (int k = 1; k < MPK_ARCH_NKEYS; k++)
		if (mpk_g.key_spare[k] &&
		    !mpk__broadcast(mpk_arch_key_mask(k), mpk_arch_key_bits(k, MPK_NONE))) {
			mpk_g.key_spare[k] = false;
			return k;
		}
	if (mpk_g.keys_held >= mpk_g.budget) {
		errno = ENOSPC;
		return -1;
	}
	/* The kernel closes the new key for this thread only; others keep
	 * their PKRU bits, closed unless someone left them open. */
	int key = mpk_os_pkey_alloc(0, 0);
	if (key < 0)
		return -1; /* ENOSPC when the kernel has none left */
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
 * revocation could not reach keeps the key out of circulation: mpkit
 * holds it as a spare and retries before reusing it.
 */
static void key_put(int key)
{
	if (mpk__broadcast(mpk_arch_key_mask(key), mpk_arch_key_bits(key, MPK_NONE))) {
		mpk_g.key_spare[key] = true;
		return;
	}
	mpk_os_pkey_free(key);
	mpk_g.keys_held--;
}

MPK_EXPORT mpk_domain *mpk_domain_create(const char *name, int rights, unsigned flags)
{
	struct mpk_domain *d;
	int err;

	if (mpk__ensure_init())
		return NULL;
	if (!name_ok(name) || !mpk__rights_ok(rights) || flags) {
		errno = EINVAL;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		errno = ENOMEM;
		return NULL;
	}
	strcpy(d->name, name);
	d->key = -1;
	d->prot = PROT_NONE;
	pthread_mutex_lock(&mpk_g.lock);
	if (slot_take(d)) {
		err = ENOMEM;
		goto fail;
	}
	if (mpk_g.backend == MPK_BACKEND_HW) {
		d->key = key_take();
		if (d->key < 0) {
			err = errno;
			mpk_g.slots[d->slot] = NULL;
			goto fail;
		}
		mpk_g.key_owner[d->key] = d;
		mpk_arch_reg_write((mpk_arch_reg_read() & ~mpk_arch_key_mask(d->key)) |
				   mpk_arch_key_bits(d->key, rights));
	}
	d->uid = mpk_g.next_uid++;
	d->magic = MPK_DOMAIN_MAGIC;
	if (d->key < 0 && mpk__soft_set_locked(d, rights)) {
		/* Cannot fail without regions, but keep the contract. */
		err = errno;
		mpk_g.slots[d->slot] = NULL;
		goto fail;
	}
	mpk_g.ndomains++;
	pthread_mutex_unlock(&mpk_g.lock);
	return d;
fail:
	pthread_mutex_unlock(&mpk_g.lock);
	free(d);
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
		free(old);
	}
}

MPK_EXPORT int mpk_domain_destroy(mpk_domain *d)
{
	if (mpk__ensure_init())
		return -1;
	pthread_mutex_lock(&mpk_g.lock);
	if (!mpk__domain_ok(d)) {
		pthread_mutex_unlock(&mpk_g.lock);
		errno = EINVAL;
		return -1;
	}
	/* Memory first: no page may carry the key once it is released. */
	mpk__domain_unmap_all(d);
	if (d->key >= 0) {
		mpk_g.key_owner[d->key] = NULL;
		key_put(d->key);
	} else {
		mpk__soft_forget(d);
	}
	mpk_g.slots[d->slot] = NULL;
	mpk_g.ndomains--;
	quarantine(d);
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
