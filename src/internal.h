/* SPDX-License-Identifier: MIT */
/* Internal state shared by the library's files.  Not installed. */
#ifndef MPK_INTERNAL_H
#define MPK_INTERNAL_H

#include <pthread.h>
#include <signal.h>
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
	bool owned;              /* a heap's or vault's: mpk_free() refuses it */
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
	/* soft process-wide rights (mpk_set_all, MPK_DOMAIN_SHARED): every
	 * thread whose own entry is older than gen holds base, and so do
	 * threads not yet born.  readers/writers count current entries only;
	 * base always counts in the union (see soft.c). */
	int base;
	uint64_t gen;
	uint64_t lru; /* mpk_g.tick when last used; atomic, relaxed */
	int holds; /* heaps and vaults built on it: destroy says EBUSY */
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
	uint64_t tick; /* advanced by slow-path calls: the LRU clock */
};

extern struct mpk_global mpk_g;

/* backtrace.c: the report's backtrace on fd, async-signal-safe: names,
 * module+offset per frame, and the addr2line commands. */
void mpk__backtrace_print(int fd);

/* init.c */
int mpk__ensure_init(void); /* 0, or -1 with errno */

/* domain.c */
static inline bool mpk__domain_ok(const struct mpk_domain *d)
{
	return d && d->magic == MPK_DOMAIN_MAGIC;
}
struct mpk_domain *mpk__domain_by_key(int key); /* signal-safe */
/* A layer above that builds on a domain holds it (EINVAL if the domain is
 * bad); mpk_domain_destroy() fails with EBUSY while it is held. */
int mpk__domain_hold(struct mpk_domain *d);
void mpk__domain_unhold(struct mpk_domain *d);
/* Called by mpk_domain_destroy() before anything else, without the lock:
 * a layer above that keeps state about d drops it (0) or refuses (-1 and
 * errno).  Set once by that layer. */
extern int (*mpk__domain_detach)(struct mpk_domain *d);

/* region.c (callers hold mpk_g.lock except for lookup) */
struct mpk_region *mpk__region_add(struct mpk_domain *d, void *start, size_t len);
void mpk__region_del(struct mpk_region *r);
struct mpk_region *mpk__region_lookup(const void *addr); /* signal-safe */
bool mpk__range_overlaps(const void *addr, size_t len);
void mpk__domain_unmap_all(struct mpk_domain *d);

/* memory.c: put fresh memory mpkit just mapped (private anonymous, any
 * protection) into d: mpk_adopt() without the /proc checks.  On failure it
 * is left PROT_NONE with no key, for the caller to unmap. */
int mpk__adopt_fresh(struct mpk_domain *d, void *addr, size_t len);

/* memory.c: mpk_alloc()/mpk_free() for the allocators' own regions (chunks,
 * big blocks, metadata).  The regions are marked owned, so that a user's
 * mpk_free() of one (its address is in /proc/PID/maps) cannot unmap live
 * blocks under a heap: it fails with EINVAL. */
void *mpk__alloc_owned(struct mpk_domain *d, size_t len);
int mpk__free_owned(struct mpk_domain *d, void *addr);

/* soft.c: rights through mprotect() (callers hold mpk_g.lock) */
int mpk__soft_get(const struct mpk_domain *d);
int mpk__soft_set_locked(struct mpk_domain *d, int rights);
void mpk__soft_forget(struct mpk_domain *d); /* on destroy */
int mpk__soft_prot(const struct mpk_domain *d);
/* Every thread's rights to d become rights (process-wide). */
int mpk__soft_set_all_locked(struct mpk_domain *d, int rights);
/* mpk_rights_save/restore for soft domains (rights.c wraps them). */
struct mpk_rights_soft {
	uint32_t slot;
	uint64_t uid;
	int rights;
};
/* Rights of the calling thread to every keyless domain: *e NULL when n
 * is 0, else malloc()ed.  -1/ENOMEM. */
int mpk__soft_save_locked(struct mpk_rights_soft **e, uint32_t *n);
/* Key changes: d got a key (its soft state no longer counts), or d lost it
 * while every thread held rights (its base now, pages at prot(rights)). */
void mpk__soft_keyed(struct mpk_domain *d);
void mpk__soft_evicted(struct mpk_domain *d, int rights);
int mpk__prot_of_rights(int rights);

/* domain.c: win a key for keyless d (hw, lock held): a free one, else the
 * least recently used domain's if it can be evicted exactly.  0 or -1. */
int mpk__key_acquire(struct mpk_domain *d);

/* broadcast.c: apply reg = (reg & ~clear) | set in every thread, by
 * signalling each; applications must leave this signal alone (see README). */
#define MPK_SIGNAL (SIGRTMAX - 2)
int mpk__broadcast(mpk_reg_t clear, mpk_reg_t set);
/* The general form: if fn is set, each thread (the caller too) gets
 * (reg & ~clear) | (fn(arg) & clear), fn running in that thread (signal
 * context: async-signal-safe, no locks).  seen_and/seen_or: the AND and OR
 * of the registers of every thread reached, before the edit. */
struct mpk_bcast {
	mpk_reg_t clear, set;
	mpk_reg_t (*fn)(const void *arg);
	const void *arg;
	mpk_reg_t seen_and, seen_or;
	/* On failure, give the threads reached (and the caller) their old
	 * bits back, where they still hold the new ones (not with fn). */
	bool undo_on_fail;
};
int mpk__broadcast_ex(struct mpk_bcast *b);

/* rights.c */
static inline bool mpk__rights_ok(int rights)
{
	return (unsigned)rights < 4 && ((0xbu >> rights) & 1);
}

#endif
