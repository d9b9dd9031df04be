/* SPDX-License-Identifier: MIT */
/* Internal state shared by the library's files.  Not installed. */
#ifndef MPK_INTERNAL_H
#define MPK_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mpkit.h"
#include "arch.h"

#define MPK_EXPORT __attribute__((visibility("default")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define MPK_DOMAIN_MAGIC 0x6d706b64u /* "mpkd" */
#define MPK_DOMAIN_DEAD  0x64656164u /* "dead" */
#define MPK_NAME_MAX 63

/* A mapping owned by a domain.  Slots live in chunks that are never freed,
 * so the fault handler can scan them without a lock: start is published
 * last (release) and cleared first. */
struct mpk_region {
	uintptr_t start; /* 0: free slot; atomic */
	size_t len;
	struct mpk_domain *domain;
	struct mpk_region *next; /* in the domain's list; under mpk_g.lock */
};

struct mpk_domain {
	uint32_t magic;
	int key;          /* hardware key, or -1: protected by mprotect() */
	uint32_t slot;    /* index in mpk_g.slots, reused after destroy */
	uint64_t uid;     /* never reused: tells a slot's owners apart */
	char name[MPK_NAME_MAX + 1];
	struct mpk_region *regions;
	/* soft protection (key == -1): threads holding each right, and the
	 * protection the regions have now (their union). */
	int readers, writers;
	int prot;
	struct mpk_domain *dead_next; /* quarantine after destroy */
};

struct mpk_global {
	pthread_mutex_t lock; /* domains, regions, keys, soft rights */
	int backend;          /* MPK_BACKEND_*, 0 before init */
	int init_errno;       /* sticky mpk_init() failure */
	bool forced;
	int budget;
	int keys_held;                           /* keys taken from the kernel */
	struct mpk_domain *key_owner[MPK_ARCH_NKEYS ? MPK_ARCH_NKEYS : 1];
	bool key_spare[MPK_ARCH_NKEYS ? MPK_ARCH_NKEYS : 1]; /* held, no owner */
	struct mpk_domain **slots; /* live domains by slot */
	uint32_t nslots, cap_slots;
	uint64_t next_uid;
	int ndomains;
	struct mpk_domain *dead_head, *dead_tail;
	int ndead;
	uint64_t broadcasts, faults;
};

extern struct mpk_global mpk_g;

/* init.c */
int mpk__ensure_init(void); /* 0, or -1 with errno */

/* domain.c */
static inline bool mpk__domain_ok(const struct mpk_domain *d)
{
	return d && d->magic == MPK_DOMAIN_MAGIC;
}
struct mpk_domain *mpk__domain_by_key(int key); /* signal-safe */

/* region.c (callers hold mpk_g.lock except for lookup) */
struct mpk_region *mpk__region_add(struct mpk_domain *d, void *start, size_t len);
void mpk__region_del(struct mpk_region *r);
struct mpk_region *mpk__region_lookup(const void *addr); /* signal-safe */
bool mpk__range_overlaps(const void *addr, size_t len);
void mpk__domain_unmap_all(struct mpk_domain *d);

/* soft.c: rights through mprotect() (callers hold mpk_g.lock) */
int mpk__soft_get(const struct mpk_domain *d);
int mpk__soft_set_locked(struct mpk_domain *d, int rights);
void mpk__soft_forget(struct mpk_domain *d); /* on destroy */
int mpk__soft_prot(const struct mpk_domain *d);

/* broadcast.c: apply reg = (reg & ~clear) | set in every thread */
int mpk__broadcast(mpk_reg_t clear, mpk_reg_t set);

/* rights.c */
static inline bool mpk__rights_ok(int rights)
{
	return (unsigned)rights < 4 && ((0xbu >> rights) & 1);
}

#endif
