/* SPDX-License-Identifier: MIT */
/*
 * What the core offers the layers built on it (src/heap/: heaps and
 * vaults; src/lockdown/; src/features/: code and watchpoints), besides the
 * public header: all they may use of it.  The rest of the core's state
 * (internal.h) stays the core's.  Not installed.
 */
#ifndef MPK_CORE_H
#define MPK_CORE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mpkit.h"
#include "../arch/arch.h"
#include "os.h"
#include "../shared/trace.h"

#define MPK_EXPORT __attribute__((visibility("default")))
/* On the declarations of the globals the fast paths read: the compiler
 * then addresses them directly, not through the GOT (-fvisibility=hidden
 * covers definitions only). */
#define MPK_HIDDEN __attribute__((visibility("hidden")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* init.c: 0, or -1 with errno (sticky). */
int mpk__ensure_init(void);

/*
 * ialloc.c: mpkit's own memory for its tables, never the process's malloc
 * (which may be mpkit's heap: mpkit allocates under its locks).  Zeroed,
 * 16-byte aligned; NULL/ENOMEM.  _irealloc keeps the contents (the tail
 * it adds is not zeroed) and on failure leaves p as it was; _ifree(NULL)
 * does nothing and keeps errno.  Any thread, any mpkit lock held; not in
 * a signal handler.
 */
void *mpk__ialloc(size_t n);
void *mpk__ialloc_array(size_t n, size_t size);
void *mpk__irealloc(void *p, size_t n);
void mpk__ifree(void *p);
/* sort.c: qsort()'s contract (not stable), without its malloc(). */
void mpk__sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

/* init.c: the backend running (MPK_BACKEND_*, 0 before init); signal-safe. */
int mpk__backend(void);
/* init.c: the core's lock (mpk_g.lock): domains, regions, keys.  A layer
 * takes its own locks before it, never after. */
void mpk__core_lock(void);
void mpk__core_unlock(void);

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

#define MPK_DOMAIN_MAGIC 0x6d706b64u /* "mpkd" */

/* Whether d is a domain handle that is alive (its magic number, no lock). */
static inline bool mpk__domain_valid(const mpk_domain *d)
{
	return d && ((const struct mpk__domain_head *)d)->magic == MPK_DOMAIN_MAGIC;
}

struct mpk_soft_held {
	uint64_t uid;
	uint64_t gen; /* the domain's generation when set */
	int rights;
	uint32_t pos; /* soft.c: index in the thread's list + 1, 0 not listed */
};
struct tcache;
struct mpk_soft_thread {
	struct mpk_soft_held *held;
	uint32_t *list;
	uint32_t cap, n;
	uint64_t epoch; /* bumped by every change of one of its entries */
	/* The heap layer's last thread cache (heap.h's mpk__tc_last), kept
	 * here for its fast paths, which read the epoch too: one TLS
	 * address for both. */
	struct tcache *tc_last;
};
/* initial-exec: the fault handler and the inline checks read it. */
extern __thread struct mpk_soft_thread mpk__soft_t MPK_HIDDEN __attribute__((tls_model("initial-exec")));
/* Bumped (release) whenever a keyless domain's base or generation moves:
 * with the thread's epoch, a caller that checked its soft rights once can
 * tell they have not changed since (struct mpk__soft_snap).  The heap
 * layer bumps it too, when a heap or a chunk goes: its thread caches
 * compare one epoch for both (heap.h). */
extern uint64_t mpk__soft_gepoch MPK_HIDDEN;

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
	/* Both words in one branch: it is on the heap's fast paths. */
	return !((s->epoch ^ __atomic_load_n(&mpk__soft_t.epoch, __ATOMIC_RELAXED)) |
		 (s->gepoch ^ __atomic_load_n(&mpk__soft_gepoch, __ATOMIC_ACQUIRE)));
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

/* rights.c: mpk_set() called from inside the library (no PLT). */
int mpk__set(mpk_domain *d, int rights);

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

/* domain.c: d is pinned (on) to the key it holds, never evicted (its
 * key is on pages it does not list: src/features/watch.c), or no longer
 * (off).  Returns d's key, -1 when it has none.  Takes the core's lock. */
int mpk__domain_pin(mpk_domain *d, bool on);
/* domain.c: give one key back to the kernel (a spare, or the least recently
 * used domain's, evicted exactly), for the kernel's execute-only key.  0, or
 * -1/ENOSPC.  Core lock held. */
int mpk__key_give_back(void);
/* Undo one on a failure path: a key from the kernel, held as a spare
 * (closed).  0 or -1.  Core lock held. */
int mpk__key_take_spare(void);
/* region.c: whether [addr, addr+len) overlaps domain memory (core lock
 * held). */
bool mpk__range_overlaps(const void *addr, size_t len);

/* memory.c: a fresh region of d (len > 0, checked by the caller), owned
 * and/or code (mpk_code_alloc: see code_region.c's mpk__region_prot()),
 * and/or a vault's (memfd_secret where the kernel has it, see
 * mpk__secret_window_map()). */
enum { MPK__REGION_OWNED = 1, MPK__REGION_EXEC = 2, MPK__REGION_VAULT = 4, MPK__REGION_GROWS = 8 };
void *mpk__alloc_region(mpk_domain *d, size_t len, unsigned flags);

/* fault.c: install the handler if it is not (keeps the callback).  If
 * ticket is not NULL, *ticket says whether this call installed it (not 0);
 * mpk__fault_handler_drop(ticket) then removes it again, on a failure
 * path, unless someone asked for it since (a call that failed leaves no
 * handler behind, and takes none from under another). */
int mpk__fault_handler_ensure(unsigned long *ticket);
void mpk__fault_handler_drop(unsigned long ticket);
/* broadcast.c's signal, which applications must leave alone (see README);
 * a handler that must not run inside a broadcast blocks it, as the
 * SIGSEGV handler does. */
#define MPK_SIGNAL (SIGRTMAX - 2)
/* hooks.c: a feature's fault hook (watchpoints), asked first by the
 * SIGSEGV handler (fault.c), in the order registered, from the handler:
 * true when the fault was its own and the access is to be retried.  The
 * handler has not read errno yet (the faulting page may hold this
 * thread's TLS): a hook opens what it must before it touches TLS, and
 * keeps errno as it found it.  A feature registers it once, before its first fault can come; it stays.
 * -1/ENOMEM when the table is full.  _run: the hooks in turn, until one
 * says true; lock-free, async-signal-safe. */
typedef bool mpk_fault_hook(siginfo_t *si, void *uc);
int mpk__fault_hook_register(mpk_fault_hook *fn);
bool mpk__fault_hooks_run(siginfo_t *si, void *uc);

/* memory.c: regions of d for the allocators (chunks, big blocks,
 * metadata), marked owned so a user's mpk_free() of one fails with EINVAL. */
void *mpk__alloc_owned(mpk_domain *d, size_t len);
int mpk__free_owned(mpk_domain *d, void *addr);
/* owned.c: resize an owned region (mremap, moving it if need be; its key and
 * protection go with it): the new start, or NULL/errno, nothing changed. */
void *mpk__remap_owned(mpk_domain *d, void *addr, size_t new_len);
/* backtrace.c: the report's backtrace into t, async-signal-safe
 * (src/shared/trace.h): from ip (a fault's instruction) when not 0, else
 * from the first frame outside mpkit. */
void mpk__backtrace_print(struct mpk__text *t, uintptr_t ip);
/* report.c: MPKIT_REPORT read (init).  A report is built in the text
 * _open() gives (small, the caller's, when another report is under way)
 * and goes where reports go, whole, with _close(); async-signal-safe. */
void mpk__report_setup(void);
struct mpk__text *mpk__report_open(struct mpk__text *small);
void mpk__report_close(struct mpk__text *t);

/*
 * window.c: map len bytes (a multiple of the page size) of fresh zeroed
 * memory with protection prot inside a window, at an address aligned to
 * align (a power of two; 0 or anything up to the page size means
 * page-aligned), with reserved guard pages on both sides.  The memory is
 * not yet a region of any domain (memory.c and region.c make it one).
 * NULL/ENOMEM.  _unmap gives [p, p+len) back: its pages are dropped and it
 * is reserved PROT_NONE again, for a later map to reuse.
 */
void *mpk__window_map(size_t len, size_t align, int prot);
void mpk__window_unmap(void *p, size_t len);

/* A range of domain memory, for the lockdown filter and tools. */
enum mpk_range_kind { MPK_RANGE_WINDOW = 1, MPK_RANGE_ADOPTED = 2 };
struct mpk_range {
	uintptr_t lo, hi; /* [lo, hi) */
	enum mpk_range_kind kind;
};

/*
 * window.c: call fn for every window, then for every adopted range, in no
 * particular order, until fn returns non-zero (which is returned).
 * Signal-safe: no lock, no allocation; a range added meanwhile may or may
 * not be seen.
 */
int mpk__ranges_each(int (*fn)(const struct mpk_range *r, void *arg), void *arg);

/* window.c: the window lock, a leaf (fork.c takes it last before fork();
 * mpk_lockdown() holds it while no window may come). */
void mpk__window_lock(void), mpk__window_unlock(void);

/*
 * region.c: every region's span, core lock held (lockdown: MADV_DONTDUMP,
 * mseal).  sealable: mpk_alloc() memory of a keyed domain, whose
 * protection never changes again (heap and vault memory gives pages back,
 * which a seal forbids).  When fn returns true for a sealable span it was
 * sealed: the region is never unmapped, and its domain keeps its key and
 * is never destroyed.
 */
struct mpk_region_span {
	uintptr_t start;
	size_t len;
	bool sealable;
};
void mpk__region_spans_each(bool (*fn)(const struct mpk_region_span *s, void *arg), void *arg);

/*
 * window.c: memory apart from the windows that the lockdown filter covers
 * (the open heap metadata area, adopted ranges, mapped files).  A filter
 * cannot be loosened, so a range it covers stays mpkit's for good: before
 * mpk_lockdown() these are mmap() and munmap(); after it, _unmap reserves
 * the range PROT_NONE again (pages dropped, nothing committed) instead of
 * leaving a hole the kernel would hand the program, and _map reuses such a
 * range (MAP_FIXED: already covered) or maps anew and stacks a filter for
 * it (mpk__cover).  _map is NULL/errno.  Call both under a lock
 * mpk_lockdown() takes (mpk_g.lock, or a layer's registered one).
 */
void *mpk__covered_map(size_t len, int prot, int flags, int fd, off_t off);
void mpk__covered_unmap(void *p, size_t len);
/* Bytes so kept reserved now (tests). */
size_t mpk__window_kept(void);
/* The ranges so kept, one fn(lo, hi, arg) each (fn must not call into
 * mpkit; NULL counts them); returns how many there are. */
size_t mpk__kept_each(void (*fn)(uintptr_t lo, uintptr_t hi, void *arg), void *arg);
/* Whether [addr, addr+len) touches a range mpkit keeps reserved after
 * mpk_lockdown() (given back outside the windows, still covered). */
bool mpk__range_kept(const void *addr, size_t len);
/* owned.c: fresh memory for d, owned, len bytes aligned to align (as
 * mpk__window_map), PROT_NONE until d's protection is put on it (for the
 * heap's chunks and guarded blocks, which mpk__free_owned() gives back);
 * flags: 0 or MPK__REGION_VAULT, which MPK__REGION_GROWS may join: then
 * only the first page is live (has d's protection, is d's region), the
 * rest PROT_NONE until mpk__owned_grow() (or all live where the kernel
 * cannot keep them apart).  NULL/errno. */
void *mpk__map_fresh(mpk_domain *d, size_t len, size_t align, unsigned flags);
/* The region at addr that grows: at least want bytes of it live
 * (page-rounded, at most what was mapped), *live its live length then.
 * 0, or -1/errno (EINVAL: no such region; mprotect()'s), nothing changed.
 * _shrink: on a failure path, back to a live length it had. */
int mpk__owned_grow(mpk_domain *d, void *addr, size_t want, size_t *live);
void mpk__owned_shrink(mpk_domain *d, void *addr, size_t live);

/*
 * secretmem.c: mpk__window_map() of memory the kernel cannot read for
 * the program (memfd_secret).  must (an MPK_DOMAIN_SECRETMEM domain):
 * that or nothing; vault: that where the kernel has it and
 * MPKIT_SECRETMEM is not off, else ordinary memory out of core dumps and
 * zero in a child (MADV_DONTDUMP, MADV_WIPEONFORK), unless
 * MPKIT_SECRETMEM=require; neither: ordinary memory.  *secret says which.
 * NULL/errno: EOPNOTSUPP (the kernel lacks it and it may not degrade),
 * ENOMEM (RLIMIT_MEMLOCK, which the kernel charges it to, or memory).
 */
void *mpk__secret_window_map(bool must, bool vault, size_t len, size_t first, size_t align,
			     int prot, bool *secret);
/* ...with secret memory over only the first bytes (page-rounded, len for
 * all), the rest reserved (PROT_NONE) for _extend: secret memory over
 * reserved [p, p+len), 0 or -1/errno as above, reserved still on failure.
 * _reserve: [p, p+len) reserved again in place (its pages given back),
 * 0 or -1/errno (no memory for a mapping: nothing changed). */
int mpk__secret_extend(void *p, size_t len, int prot);
int mpk__secret_reserve(void *p, size_t len);
/* MPKIT_SECRETMEM as MPK_SECRETMEM_* (shared/env.h), -1 if bad. */
int mpk__secretmem_mode(void);
/* Whether addr is in a region of memfd_secret memory (no lock). */
bool mpk__secret_at(const void *addr);
/* Whether d was made with MPK_DOMAIN_SECRETMEM (d valid). */
bool mpk__domain_secretmem(const mpk_domain *d);

/*
 * hooks.c: memory a layer keeps outside domain regions that the lockdown
 * filter must cover too (the heap's metadata area, mapped apart when it is
 * open).  The layer registers once, before its first range: each(fn, arg)
 * calls fn for every range it has; lock()/unlock() hold them still while
 * mpk_lockdown() reads them (taken before the core's lock, as the layer's
 * own locks are).  -1/ENOMEM from register when the table is full.
 * _each: every layer's ranges; _lock: every layer's held, in registration
 * order, returning how many for _unlock, which lets them go in reverse.
 */
struct mpk_layer_ranges {
	void (*each)(void (*fn)(uintptr_t lo, uintptr_t hi, void *arg), void *arg);
	void (*lock)(void), (*unlock)(void);
};
int mpk__layer_ranges_register(const struct mpk_layer_ranges *r);
void mpk__layer_ranges_each(void (*fn)(uintptr_t lo, uintptr_t hi, void *arg), void *arg);
unsigned mpk__layer_ranges_lock(void);
void mpk__layer_ranges_unlock(unsigned n);
/*
 * hooks.c: memory mpkit adds outside the ranges the lockdown filter
 * already covers (a new window, an adopted range, a mapping kept apart) is
 * passed to mpk__cover() before it is used.  Before mpk_lockdown() that
 * does nothing; mpk_lockdown() installs its hook (_set), which stacks a
 * filter for the range: 0, or -1/errno (do not use it).  The hook is
 * called under the lock of whoever adds the range (window, heap
 * metadata, the core's) and takes none.
 */
typedef int mpk_cover_hook(uintptr_t lo, uintptr_t hi);
void mpk__cover_hook_set(mpk_cover_hook *fn);
int mpk__cover(uintptr_t lo, uintptr_t hi);

/*
 * fork.c: fork() while other threads are inside mpkit.  The core's fork
 * handlers take its locks (mpk_g.lock, every domain's lock, the
 * broadcast lock, the thread registry's, then the window lock) in prepare,
 * release them in the parent, and make them (and the registry, which keeps
 * only the forking thread, and the broadcast state) anew in the child.  A
 * layer above with locks of its own that it holds while calling into the
 * core (heaps, vaults) registers its three handlers here, once, before its
 * first lock is taken:
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

/* registry.c: for mpk_lockdown(), the other mpkits in this process (their
 * registries, found in /proc/self/maps by size and magic, read as
 * another process would: no key applies): up to max of
 * their system-call sites into ips and their registries' locked words
 * into locked (os.h); the number found, or -1/errno (E2BIG: more than
 * max).  Under mpkit's locks (no malloc). */
int mpk__registry_peers(uintptr_t *ips, uint64_t **locked, size_t max);

#endif
