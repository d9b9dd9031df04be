/* SPDX-License-Identifier: MIT */
/* Internal state shared by the library's files.  Not installed. */
#ifndef MPK_INTERNAL_H
#define MPK_INTERNAL_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/types.h>

#include "mpkit.h"
#include "../arch/arch.h"
#include "core.h"
#include "testing.h"
#include "thread.h"

#define MPK_DOMAIN_DEAD  0x64656164u /* "dead" */
#define MPK_NAME_MAX 63

/* A mapping owned by a domain.  Slots live in chunks that are never freed,
 * so the fault handler can read them without a lock: start is published
 * (release) before the region enters the table and cleared first; len and
 * domain are written atomically before it (region.c). */
struct mpk_region {
	uintptr_t start; /* 0: free slot; atomic */
	size_t len;      /* atomic for readers */
	size_t cap;      /* reserved for it: len, or more for a region that grows
			  * (a vault chunk, mpk__owned_grow()); the rest is PROT_NONE */
	struct mpk_domain *domain; /* atomic for readers */
	struct mpk_region *next, **pprev; /* in the domain's list; under mpk_g.lock */
	bool owned;              /* a heap's or vault's: mpk_free() refuses it */
	bool sealed;             /* mseal()ed by mpk_lockdown(): never unmapped */
	bool exec;               /* code (mpk_code_alloc): see mpk__region_prot() */
	bool secret;             /* memfd_secret pages, not inherited (secretmem.c) */
	uint32_t reg;            /* its registry entry + 1, 0 none (registry.c) */
};

/*
 * A domain's lock: a futex word, 0 free, 1 held, 2 held with a waiter.
 * Taken and released inline: a soft open+close takes it twice, and
 * glibc's mutex calls were a sixth of that pair's instructions.  Not
 * recursive, not robust, like the default mutex it replaces.
 */
struct mpk_lock {
	int word;
};
void mpk__lock_wait(struct mpk_lock *l);
void mpk__lock_wake(struct mpk_lock *l);

static inline void mpk__lock(struct mpk_lock *l)
{
	int free = 0;

	if (!__atomic_compare_exchange_n(&l->word, &free, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		mpk__lock_wait(l);
}

static inline void mpk__unlock(struct mpk_lock *l)
{
	if (__atomic_exchange_n(&l->word, 0, __ATOMIC_RELEASE) == 2)
		mpk__lock_wake(l);
}

struct mpk_domain {
	uint32_t magic;
	int key;          /* hardware key, or -1: protected by mprotect() */
	/* hw fast path: per rights value, the word mpk_arch_fast_set()
	 * applies (0 while keyless or dead; index 2 always 0).  Unpublished
	 * before key turns -1, published after it gets a key: domain.c's
	 * mpk__fast_publish(). */
	uint64_t fast[4];
	uint32_t slot;    /* index in mpk_g.slots, reused after destroy */
	uint64_t uid;     /* never reused: tells a slot's owners apart */
	/* soft process-wide rights (mpk_set_all, MPK_DOMAIN_SHARED): every
	 * thread whose own entry is older than gen holds base, and so do
	 * threads not yet born (see soft.c). */
	uint64_t gen;  /* atomic: the no-change check reads it without the lock */
	int base_pub;  /* base, stored (release) once its protection is in place */
	/* Up to here: core.h's struct mpk__domain_head (asserted below). */
	char name[MPK_NAME_MAX + 1];
	struct mpk_region *regions;
	/* The domain's own lock: its region list, and its soft rights and
	 * protection below.  Taken after mpk_g.lock by whoever holds that;
	 * alone by a soft rights change on the soft backend (soft.c), so that
	 * threads changing rights to different domains do not wait for each
	 * other's mprotect() calls.  On hw, soft rights change under both. */
	struct mpk_lock lock;
	/* soft protection (key == -1): threads holding each right, and the
	 * protection the regions have now (their union). */
	int readers, writers;
	int prot;
	/* The process-wide rights themselves (gen, base_pub above):
	 * readers/writers count current entries only; base always counts in
	 * the union. */
	int base;
	/* In soft.c's list of keyless domains whose base is not MPK_NONE
	 * (pprev NULL: not in it); under mpk_g.lock. */
	struct mpk_domain *based_next, **based_pprev;
	uint64_t restore_mark; /* rights.c: in the save being restored; under mpk_g.lock */
	uint64_t lru; /* mpk_g.tick when last used; atomic, relaxed */
	int holds; /* heaps and vaults built on it: destroy says EBUSY */
	bool sealed; /* has sealed regions: keeps its key, never destroyed */
	bool secretmem; /* MPK_DOMAIN_SECRETMEM: every region memfd_secret */
	bool pinned; /* never evicted: its key is on pages it does not list (watch.c) */
	struct mpk_domain *dead_next; /* quarantine after destroy */
};

#define MPK__HEAD_SAME(f)                                                         \
	_Static_assert(offsetof(struct mpk_domain, f) == offsetof(struct mpk__domain_head, f) && \
		       sizeof(((struct mpk_domain *)0)->f) == sizeof(((struct mpk__domain_head *)0)->f), \
		       "struct mpk_domain must start with struct mpk__domain_head: " #f)
MPK__HEAD_SAME(magic);
MPK__HEAD_SAME(key);
MPK__HEAD_SAME(fast);
MPK__HEAD_SAME(slot);
MPK__HEAD_SAME(uid);
MPK__HEAD_SAME(gen);
MPK__HEAD_SAME(base_pub);

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
	uint64_t faults; /* reports made (broadcast.c counts its own) */
	uint64_t tick; /* advanced by slow-path calls: the LRU clock */
};

extern struct mpk_global mpk_g;


/* domain.c */
static inline bool mpk__domain_ok(const struct mpk_domain *d)
{
	return d && d->magic == MPK_DOMAIN_MAGIC;
}
struct mpk_domain *mpk__domain_by_key(int key); /* signal-safe */

/* memory.c: give fresh pages of d its protection (key, or soft rights);
 * both locks held, or in a forked child. */
int mpk__protect_new(struct mpk_domain *d, void *p, size_t len, bool exec);
/* memory.c, for itself and owned.c: the end of an adopt or own (both
 * locks go; rc returned, errno err when rc is not 0), and the undoing of
 * a failed one (d's key, or its protection, off [addr, len), which gets
 * prot). */
int mpk__unlock_both(struct mpk_domain *d, int rc, int err);
void mpk__untag(const struct mpk_domain *d, void *addr, size_t len, int prot);
/* secretmem.c: 0 if memfd_secret(2) works here, else -1/errno; the fork
 * child's renewal of secret regions (no lock: the child is alone). */
int mpk__secretmem_probe(void);
void mpk__secretmem_child(void);

/* region.c (callers hold mpk_g.lock except for lookup; add and del also the
 * domain's lock) */
struct mpk_region *mpk__region_add(struct mpk_domain *d, void *start, size_t len);
void mpk__region_del(struct mpk_region *r);
/* r (in a window) now covers len bytes (0 < len <= r->cap): grown, its
 * new pages have its protection already; shrunk, the pages let go are
 * the caller's to close.  0 or -1/errno. */
int mpk__region_resize(struct mpk_region *r, size_t len);
struct mpk_region *mpk__region_lookup(const void *addr); /* signal-safe */
/* d's region starting at start, or NULL; O(1). */
struct mpk_region *mpk__region_find(struct mpk_domain *d, const void *start);
void mpk__domain_unmap_all(struct mpk_domain *d);
/* Every region, in no order (lock held): fn(region, arg). */
void mpk__regions_each(void (*fn)(struct mpk_region *r, void *arg), void *arg);
/* Unmap a region's memory (after mpk__region_del; len: its cap): back
 * into its window's reservation, or mpk__covered_unmap() for an adopted
 * range or a file. */
void mpk__region_release(void *start, size_t len);

/* The services for layers above (hold, detach, owned regions): core.h. */

/* registry.c: the page `mpkit maps` reads (src/shared/registry.h).
 * Called with the region's domain's lock held (and mpk_g.lock for add
 * and del); best effort (no memory: not recorded).  _sync: d's regions'
 * key and protection changed: their entries follow; _set: r's kind or
 * length did. */
void mpk__registry_add(struct mpk_region *r);
void mpk__registry_del(struct mpk_region *r);
void mpk__registry_sync(struct mpk_domain *d);
/* mpk__registry_sync() of a keyless domain whose pages became prot (soft.c). */
void mpk__registry_soft(struct mpk_domain *d, int prot);
void mpk__registry_set(struct mpk_region *r);


/* The page protection region r gets where data would get prot (key > 0:
 * pages carry that key, else protected by mprotect()): a code region
 * (code_region.c) is executable too, but without a key never while
 * writable (W^X by mprotect flipping).  Inline: every soft rights change
 * asks it. */
static inline int mpk__region_prot(const struct mpk_region *r, int prot, int key)
{
	if (!r->exec)
		return prot;
	if (key > 0)
		return prot | PROT_EXEC; /* the key alone decides who writes */
	if (prot & PROT_WRITE)
		return PROT_READ | PROT_WRITE;
	return prot ? prot | PROT_EXEC : PROT_NONE;
}
/* audit.c: the key (0: none) and protection r's pages have now if nothing
 * touched them behind mpkit's back (d->lock or mpk_g.lock held, or a
 * snapshot that may race). */
void mpk__region_expect(const struct mpk_region *r, int *key, int *prot);
/* Its fault hook, called first by the SIGSEGV handler (fault.c), as
 * features' hooks are (core.h): true when the fault was a fetch from code
 * whose write window was open, and the access is to be retried. */
bool mpk__code_fault(siginfo_t *si, void *uc);

/* soft.c: rights through mprotect() (callers hold mpk_g.lock) */
int mpk__soft_get(const struct mpk_domain *d);
/* Without the lock (soft backend): whether the calling thread holds
 * exactly rights to d already, so that setting them changes nothing.
 * Inline, so that set_slow's early return needs no frame. */
static inline bool mpk__soft_holds(const struct mpk_domain *d, int rights)
{
	return mpk__soft_rights_now((const struct mpk__domain_head *)d) == rights;
}
/* The calling thread's rights to keyless d become rights: takes d->lock
 * (the caller may hold mpk_g.lock).  mpk__soft_set: the soft backend's
 * mpk_set(), with d->lock alone (d checked again under it). */
int mpk__soft_set_locked(struct mpk_domain *d, int rights);
int mpk__soft_set(struct mpk_domain *d, int rights);
/* mpk_enter() of valid d and rights 0, 1 or 3 on the soft backend (saved:
 * the rights held before), and mpk_leave() of a scope of such a domain. */
mpk_scope mpk__soft_enter(struct mpk_domain *d, int rights, int saved);
int mpk__soft_leave(mpk_scope *s);
void mpk__soft_forget(struct mpk_domain *d); /* on destroy, d->lock held */
/* fork() and mpk_audit(), mpk_g.lock held: every live domain's lock
 * (fork.c; the child makes them anew). */
void mpk__domains_lock(void), mpk__domains_unlock(void), mpk__domains_child(void);
int mpk__soft_prot(const struct mpk_domain *d);
/* Every thread's rights to d become rights (process-wide). */
int mpk__soft_set_all_locked(struct mpk_domain *d, int rights);
/* mpk_rights_save/restore for soft domains (rights.c wraps them). */
struct mpk_rights_soft {
	uint32_t slot;
	uint64_t uid;
	int rights;
};
/* The calling thread's number, never another's (not 0). */
uint64_t mpk__soft_thread_id(void);
/* ialloc.c, for fork.c: its lock (a leaf, taken last) and anew in the child. */
void mpk__ialloc_lock(void), mpk__ialloc_unlock(void), mpk__ialloc_child(void);
/* The keyless domains the calling thread holds more than none to: *e NULL when n is 0, else from mpk__ialloc().  -1/ENOMEM.  Costs
 * what the thread holds plus the domains with a base (mpk_set_all). */
int mpk__soft_save_locked(struct mpk_rights_soft **e, uint32_t *n);
/* At most how many those are, and each of them with its rights (fn must not
 * change rights: stale entries are dropped from the list on the way). */
uint32_t mpk__soft_listed_max(void);
void mpk__soft_each_held(void (*fn)(struct mpk_domain *d, int rights, void *arg), void *arg);
/* Key changes: d got a key (its soft state no longer counts), or d lost it
 * while every thread held rights: pages at prot(rights), no holder
 * counted and base none; then each thread (in the broadcast that closes
 * the key: signal context) records and counts its own rights with
 * mpk__soft_hold_signal(), false if it could not (no memory).  If some
 * thread was not recorded, mpk__soft_evicted_loose() makes rights the base
 * (counted for good: looser, but nobody loses access).  prepare: before
 * that broadcast, outside signal context. */
void mpk__soft_keyed(struct mpk_domain *d);
void mpk__soft_evict_prepare(void);
void mpk__soft_evicted(struct mpk_domain *d, int rights);
bool mpk__soft_hold_signal(struct mpk_domain *d, int rights);
void mpk__soft_evicted_loose(struct mpk_domain *d, int rights);
int mpk__prot_of_rights(int rights);

/* domain.c: d's key becomes k (-1: none), its fast-path words with it
 * (unpublished first when it loses one). */
void mpk__fast_publish(struct mpk_domain *d, int k);

/* domain.c: win a key for keyless d (hw, lock held): a free one, else the
 * least recently used domain's if it can be evicted exactly.  0 or -1. */
int mpk__key_acquire(struct mpk_domain *d);

/* fork.c: the core's fork handlers; layers register theirs (core.h:
 * mpk__atfork_register).  The broadcast's: thread.h. */
void mpk__atfork_init(void); /* from do_init: pthread_atfork once */

/* rights.c */
static inline bool mpk__rights_ok(int rights)
{
	return (unsigned)rights < 4 && ((0xbu >> rights) & 1);
}

#endif
