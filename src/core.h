/* SPDX-License-Identifier: MIT */
/*
 * What the core offers the layers built on it (src/heap/: heaps and
 * vaults), besides the public header: all they may use of it.  The rest
 * of the core's state (internal.h) stays the core's.  Not installed.
 */
#ifndef MPK_CORE_H
#define MPK_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mpkit.h"
#include "arch.h"
#include "os.h"

#define MPK_EXPORT __attribute__((visibility("default")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* init.c: 0, or -1 with errno (sticky). */
int mpk__ensure_init(void);

/* layer.c: whether d is a domain handle that is alive (a magic number,
 * no lock). */
bool mpk__domain_valid(const mpk_domain *d);

/*
 * The calling thread's rights to a domain, lock-free and inline (the heaps'
 * fast paths check them on every call, and a call there would cost a stack
 * frame more than the check itself).  What it reads of a domain is its
 * head: internal.h's struct mpk_domain starts with these fields, in
 * this order (asserted there).  A thread's soft rights are its entries by
 * domain slot: one counts while its uid and gen are the domain's, else
 * the domain's published base applies.  cap is published last (release)
 * when the table grows: read it first.
 */
struct mpk__domain_head {
	uint32_t magic;
	int key;          /* hardware key, or -1 */
	uint64_t fast[4]; /* rights.c's fast-path words */
	uint32_t slot;
	uint64_t uid;
	uint64_t gen;     /* atomic */
	int base_pub;     /* atomic */
};
struct mpk_soft_held {
	uint64_t uid;
	uint64_t gen; /* the domain's generation when set */
	int rights;
	uint32_t pos; /* soft.c: index in the thread's list + 1, 0 not listed */
};
struct mpk_soft_thread {
	struct mpk_soft_held *held;
	uint32_t *list;
	uint32_t cap, n;
	uint64_t epoch; /* bumped by every change of one of its entries */
};
/* initial-exec: the fault handler and the inline checks read it. */
extern __thread struct mpk_soft_thread mpk__soft_t __attribute__((tls_model("initial-exec")));
/* Bumped (release) whenever a keyless domain's base or generation moves:
 * with the thread's epoch, a caller that checked its soft rights once can
 * tell they have not changed since (struct mpk__soft_snap). */
extern uint64_t mpk__soft_gepoch;

/* The calling thread's soft rights to keyless domain d, lock-free. */
static inline int mpk__soft_rights_now(const struct mpk__domain_head *d)
{
	uint64_t gen = __atomic_load_n(&d->gen, __ATOMIC_ACQUIRE);
	uint32_t s = d->slot;

	if (s < __atomic_load_n(&mpk__soft_t.cap, __ATOMIC_ACQUIRE)) {
		const struct mpk_soft_held *h = &mpk__soft_t.held[s];
		if (h->uid == d->uid && h->gen == gen)
			return h->rights;
	}
	return __atomic_load_n(&d->base_pub, __ATOMIC_ACQUIRE);
}

/*
 * For callers that ask about the same domain again and again (a heap's
 * thread cache): taken before a check of the soft rights, a snapshot is
 * still the same afterwards only if no soft right of this thread, no base
 * and no generation moved in between, so the check's answer still holds.
 * Keyed domains are not covered: their rights are one read of the
 * register, and a keyed domain loses its key only through a base that
 * moves.  The epochs start at 0: a snapshot that never was is ~0.
 */
struct mpk__soft_snap {
	uint64_t epoch, gepoch;
};

static inline struct mpk__soft_snap mpk__soft_snap_take(void)
{
	return (struct mpk__soft_snap){ __atomic_load_n(&mpk__soft_t.epoch, __ATOMIC_RELAXED),
					__atomic_load_n(&mpk__soft_gepoch, __ATOMIC_ACQUIRE) };
}

static inline bool mpk__soft_snap_same(const struct mpk__soft_snap *s)
{
	return s->epoch == __atomic_load_n(&mpk__soft_t.epoch, __ATOMIC_RELAXED) &&
	       s->gepoch == __atomic_load_n(&mpk__soft_gepoch, __ATOMIC_ACQUIRE);
}

/* The key's bits in the rights register, or the soft rights.  The key is
 * read once (an eviction may store -1 into it meanwhile: moves keep every
 * thread's access, so the old key's bits still say what it may touch). */
static inline int mpk__rights_now(const mpk_domain *dom)
{
	const struct mpk__domain_head *d = (const struct mpk__domain_head *)dom;
	int k = __atomic_load_n(&d->key, __ATOMIC_ACQUIRE);

	if (k >= 0)
		return mpk_arch_key_rights(mpk_arch_reg_read(), k);
	return mpk__soft_rights_now(d);
}

/* domain.c: a layer that builds on a domain holds it (EINVAL if the
 * domain is bad); mpk_domain_destroy() fails with EBUSY while it is held.
 * mpk__domain_detach is called by mpk_domain_destroy() before anything
 * else, without the lock: the layer drops its state about d (0) or
 * refuses (-1 and errno).  Set once by that layer. */
int mpk__domain_hold(mpk_domain *d);
void mpk__domain_unhold(mpk_domain *d);
/* How many holds d has now (its layers' and its seal's), 0 if it is bad. */
int mpk__domain_holds(mpk_domain *d);
extern int (*mpk__domain_detach)(mpk_domain *d);

/* memory.c: regions of d for the allocators (chunks, big blocks,
 * metadata), marked owned so a user's mpk_free() of one fails with EINVAL. */
void *mpk__alloc_owned(mpk_domain *d, size_t len);
int mpk__free_owned(mpk_domain *d, void *addr);
/* Resize an owned region (mremap, moving it if need be; its key and
 * protection go with it): the new start, or NULL/errno, nothing changed. */
void *mpk__remap_owned(mpk_domain *d, void *addr, size_t new_len);
/* backtrace.c: the report's backtrace on fd, async-signal-safe: names,
 * module+offset per frame, and the addr2line commands. */
void mpk__backtrace_print(int fd);

/* window.c: len bytes (page multiple) mapped with prot in a reserved
 * window, align-aligned, between reserved guard pages; not yet a region.
 * NULL/ENOMEM.  _unmap reserves them again. */
void *mpk__window_map(size_t len, size_t align, int prot);
void mpk__window_unmap(void *p, size_t len);
/*
 * window.c: memory apart from the windows that the lockdown filter covers
 * (the open heap metadata area, adopted ranges, mapped files).  A filter
 * cannot be loosened, so a range it covers stays mpkit's for good: before
 * mpk_lockdown() these are mmap() and munmap(); after it, _unmap reserves
 * the range PROT_NONE again (pages dropped, nothing committed) instead of
 * leaving a hole the kernel would hand the program, and _map reuses such a
 * range (MAP_FIXED: already covered) or maps anew and stacks a filter for
 * it (mpk__lockdown_cover).  _map is NULL/errno.  Call both under a lock
 * mpk_lockdown() takes (mpk_g.lock, or a layer's registered one).
 */
void *mpk__covered_map(size_t len, int prot, int flags, int fd, off_t off);
void mpk__covered_unmap(void *p, size_t len);
/* Bytes so kept reserved now (tests). */
size_t mpk__window_kept(void);
/* The ranges so kept, one fn(lo, hi, arg) each (fn must not call into
 * mpkit; NULL counts them); returns how many there are. */
size_t mpk__kept_each(void (*fn)(uintptr_t lo, uintptr_t hi, void *arg), void *arg);
/* Put fresh memory mpkit just mapped (private anonymous, any protection)
 * into d, owned; on failure it is left PROT_NONE with no key, for the
 * caller to unmap. */
int mpk__adopt_fresh(mpk_domain *d, void *addr, size_t len);

/*
 * lockdown.c: memory a layer keeps outside domain regions that the
 * lockdown filter must cover too (the heap's metadata area, mapped apart
 * when it is open).  The layer registers once, before its first range:
 * each(fn, arg) calls fn for every range it has; lock()/unlock() hold them
 * still while mpk_lockdown() reads them (taken before the core's lock, as
 * the layer's own locks are).  A range the layer adds later it passes to
 * mpk__lockdown_cover() before using it: after mpk_lockdown() that stacks
 * a filter for it (0, or -1/errno: do not use it); before, it does
 * nothing.  -1/ENOMEM from register when the table is full.
 */
struct mpk_layer_ranges {
	void (*each)(void (*fn)(uintptr_t lo, uintptr_t hi, void *arg), void *arg);
	void (*lock)(void), (*unlock)(void);
};
int mpk__lockdown_ranges_register(const struct mpk_layer_ranges *r);
int mpk__lockdown_cover(uintptr_t lo, uintptr_t hi);

/*
 * fork.c: fork() while other threads are inside mpkit.  The core's fork
 * handlers take its locks (mpk_g.lock, then the broadcast lock, then the
 * registry's) in prepare, release them in the parent, and make them (and
 * the registry, which keeps only the forking thread, and the broadcast
 * state) anew in the child.  A layer above with locks of its own that it
 * holds while calling into the core (heaps, vaults) registers its three
 * handlers here, once, before its first lock is taken:
 *
 *	mpk__atfork_register(my_prepare, my_parent, my_child);
 *
 * Order: every layer's prepare runs in the order registered, all before the
 * core's prepare (their locks come before the core's); parent and child
 * handlers run in the reverse order, all after the core's.  Handlers run
 * with no mpkit lock held by the core yet (prepare) or with the core's
 * locks usable again (parent, child).  -1/ENOMEM when the table is full.
 */
int mpk__atfork_register(void (*prepare)(void), void (*parent)(void), void (*child)(void));

#endif
