/* SPDX-License-Identifier: MIT */
/*
 * mpkit: memory protection keys made practical.
 *
 * A protection domain is a named set of memory regions whose access rights a
 * thread changes in nanoseconds.  With hardware keys (x86 PKU) a rights change
 * is one WRPKRU and affects the calling thread only; without them mpkit falls
 * back to mprotect() and rights become process-wide (the union of what every
 * thread holds).  See README.md for the differences.
 *
 * Error convention, everywhere: functions returning int return 0 (or a
 * non-negative value) on success and -1 with errno set on failure; functions
 * returning a pointer return NULL with errno set.  A failed call leaves every
 * state as it was: domains, hardware keys, rights, memory and its
 * protection, signal actions, seccomp and no_new_privs, descriptors and
 * threads (tests/t_fail_*.c check every call).  What mpkit keeps for
 * itself to reuse may stay: its initialisation (made by the first call,
 * even one that fails), address space it reserved for domain memory and
 * its own tables (after mpk_lockdown(), with the filter that covers them),
 * and which domain holds a key (keys move, rights do not).  A step the
 * kernel refuses only after an earlier one took effect leaves that one
 * where it cannot be undone; the calls say where (mpk_lockdown(),
 * mpk_domain_create()).
 *
 * Sizes, in every call that allocates: a size no memory can hold (above
 * PTRDIFF_MAX, or an n * size that overflows) is ENOMEM, as for malloc()
 * and mmap(); a size of 0 is EINVAL where the call cannot give 0 bytes
 * (pages, secrets), and a block of its own from a heap.
 *
 * Stability (docs/abi.md): from 1.0 on, everything declared here without
 * a "mpk__" prefix is stable within a major version (soname libmpkit.so.N):
 * functions keep their behaviour, enum values their meaning, and structs
 * their layout; new members of struct mpk_info, mpk_stats and
 * mpk_heap_stats take their reserved space, so the sizes never change.
 * Before 1.0 (now) the soname is libmpkit.so.0 and each minor release
 * (0.Y) may change the API; its notes (NEWS.md) say how.  Names with
 * "mpk__" are internal to the macros and may change in any release.
 */
#ifndef MPKIT_H
#define MPKIT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * What the compiler can check for the caller, with GCC 7+ and clang; the
 * macros are empty elsewhere (and MPK__DEALLOC before GCC 11).  Only
 * GNU __attribute__ spellings, so C++ and -std=c11 -pedantic take them.
 *
 * MPK__NODISCARD (warn_unused_result) marks the calls whose failure
 * leaves memory more open than the program believes (mpk_set(),
 * mpk_enter(), mpk_leave(), mpk_set_all(), rights save/restore, the
 * secret rights calls, mpk_adopt(), mpk_exec_only(), mpk_lockdown(),
 * mpk_init()), and those whose result is the only handle to what they
 * made (domains, heaps, memory, watches, threads).  Frees and destroys
 * are not marked (cleanup paths, like free()), nor are calls that only
 * report (getters, mpk_info(), formats) or install handlers.
 *
 * Allocators: no plain malloc attribute.  It tells the compiler that no
 * other code reaches the memory until the pointer escapes, so a store
 * inside MPK_WITH() may be moved past mpk_leave(), which never sees the
 * pointer (clang 14 -O2 did: the store faulted on a closed domain).
 * Rights to mpkit memory change through calls that do not take it.
 * MPK__DEALLOC (GCC 11+: the call that frees it, for -Wmismatched-dealloc and
 * -Wuse-after-free), MPK__ALLOC_SIZE (its size, for -Wstringop-overflow,
 * -Warray-bounds and _FORTIFY_SOURCE) on heap blocks and secrets only:
 * mpk_alloc(), mpk_code_alloc() and mpk_map_file() give whole pages,
 * all usable.
 *
 * MPK__NONNULL(n): argument n must not be NULL.  Given where NULL is
 * always an error (the call fails with EINVAL); not where NULL means
 * something (a free of NULL, a handler NULL, mpk_domain_of()).  The
 * compiler may then assume the argument is not NULL, in the caller and
 * in the callee: the library is built with MPK_NO_NONNULL defined, so
 * that its own checks stay and a NULL still fails with EINVAL.  Define
 * MPK_NO_NONNULL before including mpkit.h to pass NULL on purpose
 * (tests of bad arguments).
 *
 * MPK__ACCESS_*: what a call does with a buffer (GCC 10+): reads it,
 * writes it, writes up to a size argument.  GCC takes the buffer to be
 * there (not NULL) unless the size is 0, so MPK_NO_NONNULL drops these
 * too.
 */
#if defined(__GNUC__) && defined(__has_attribute)
#define MPK__HAS_ATTR(a) __has_attribute(a)
#else
#define MPK__HAS_ATTR(a) 0
#endif
#if MPK__HAS_ATTR(__warn_unused_result__)
#define MPK__NODISCARD __attribute__((__warn_unused_result__))
#else
#define MPK__NODISCARD
#endif
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#define MPK__DEALLOC(f, n) __attribute__((__malloc__(f, n)))
#else
#define MPK__DEALLOC(f, n)
#endif
#if MPK__HAS_ATTR(__alloc_size__)
#define MPK__ALLOC_SIZE(n) __attribute__((__alloc_size__(n)))
#define MPK__ALLOC_SIZE2(n, m) __attribute__((__alloc_size__(n, m)))
#else
#define MPK__ALLOC_SIZE(n)
#define MPK__ALLOC_SIZE2(n, m)
#endif
#if MPK__HAS_ATTR(__alloc_align__)
#define MPK__ALLOC_ALIGN(n) __attribute__((__alloc_align__(n)))
#else
#define MPK__ALLOC_ALIGN(n)
#endif
#if MPK__HAS_ATTR(__nonnull__) && !defined(MPK_NO_NONNULL)
#define MPK__NONNULL(n) __attribute__((__nonnull__(n)))
#else
#define MPK__NONNULL(n)
#endif
#if MPK__HAS_ATTR(__access__) && !defined(MPK_NO_NONNULL)
#define MPK__ACCESS_R(n) __attribute__((__access__(__read_only__, n)))
#define MPK__ACCESS_W(n) __attribute__((__access__(__write_only__, n)))
#define MPK__ACCESS_WS(n, size) __attribute__((__access__(__write_only__, n, size)))
#define MPK__ACCESS_RS(n, size) __attribute__((__access__(__read_only__, n, size)))
#else
#define MPK__ACCESS_R(n)
#define MPK__ACCESS_W(n)
#define MPK__ACCESS_WS(n, size)
#define MPK__ACCESS_RS(n, size)
#endif
/*
 * MPK__NOTHROW: no mpkit call throws or lets an exception through, so
 * C++ sees every one as noexcept (throw() before C++11) and C with GCC's
 * nothrow attribute, as glibc's __THROW marks libc's.  The handlers a
 * program gives (faults, misuse, watches) run inside an mpkit call or its
 * signal handler, whose frames no exception can pass: they must not
 * throw either.
 */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define MPK__NOTHROW noexcept(true)
#elif defined(__cplusplus)
#define MPK__NOTHROW throw()
#elif MPK__HAS_ATTR(__nothrow__)
#define MPK__NOTHROW __attribute__((__nothrow__))
#else
#define MPK__NOTHROW
#endif

#define MPK_VERSION_MAJOR 0
#define MPK_VERSION_MINOR 1
#define MPK_VERSION_PATCH 0
#define MPK_VERSION_STRING "0.1.0"
/* The version as one integer, MAJOR * 10000 + MINOR * 100 + PATCH (0.1.0
 * is 100, 1.2.3 would be 10203), for #if and comparisons. */
#define MPK_VERSION_NUMBER (MPK_VERSION_MAJOR * 10000 + MPK_VERSION_MINOR * 100 + MPK_VERSION_PATCH)

/* The version of the library actually loaded (may differ from the
 * header): as a string, and as MPK_VERSION_NUMBER counts it. */
const char *mpk_version(void) MPK__NOTHROW;
int mpk_version_number(void) MPK__NOTHROW;

/* ---- rights ------------------------------------------------------------ */

/* Access rights of one thread to one domain.  x86 keys never govern
 * instruction fetch, so there is no execute right.  Any other value is
 * rejected with EINVAL. */
enum {
	MPK_NONE = 0, /* no access: reads and writes fault */
	MPK_READ = 1, /* read-only: writes fault */
	MPK_RW   = 3, /* read and write */
};

/* ---- backends ---------------------------------------------------------- */

enum mpk_backend {
	MPK_BACKEND_HW   = 1, /* hardware protection keys (PKRU per thread) */
	MPK_BACKEND_SOFT = 2, /* mprotect() emulation, rights are process-wide */
};

/*
 * Choose the backend.  Called implicitly by the first mpkit call; calling it
 * first lets a program see an error early.  The environment variable
 * MPKIT_BACKEND=hw|soft|auto (default auto) decides: auto picks hw where the
 * CPU and kernel support keys, else soft.  Errors: EINVAL (MPKIT_BACKEND or
 * MPKIT_KEYS holds an unknown value), ENOTSUP (hw asked for but not
 * available).  The outcome is sticky for the life of the process.
 */
int mpk_init(void) MPK__NOTHROW MPK__NODISCARD;

/* The backend in use (MPK_BACKEND_HW or _SOFT), or -1 with errno as mpk_init. */
int mpk_backend(void) MPK__NOTHROW;

/* "hw" or "soft" for a backend value, NULL with EINVAL for anything else. */
const char *mpk_backend_name(int backend) MPK__NOTHROW;

/* What the machine and mpkit can do; filled by mpk_info(). */
struct mpk_info {
	int cpu_pku;            /* CPUID.7.0:ECX.PKU */
	int cpu_ospke;          /* CPUID.7.0:ECX.OSPKE: the kernel enabled PKRU */
	int kernel_pkeys;       /* pkey_alloc() works in this process */
	int backend;            /* what runs (or would run): MPK_BACKEND_* */
	int backend_forced;     /* MPKIT_BACKEND named it */
	int keys_free;          /* keys pkey_alloc() could hand out right now */
	int key_budget;         /* most keys mpkit will take (MPKIT_KEYS) */
	int keys_in_use;        /* keys mpkit holds now */
	int exec_only;          /* mmap(PROT_EXEC) gives execute-only memory */
	int pkru_valid;         /* pkru below is meaningful (hw only) */
	uint32_t pkru;          /* the calling thread's PKRU */
	int domains;            /* live domains */
	int region_names;       /* the kernel shows regions as [anon:mpk:NAME] */
	int region_names_errno; /* if not, why: the errno of prctl(PR_SET_VMA),
				   EINVAL before Linux 5.17 or without
				   CONFIG_ANON_VMA_NAME */
	const char *error;      /* why mpkit cannot start (one line naming the
				   variable), NULL when it can */
	/* Secrets the kernel cannot read for the program (process_vm_readv,
	 * /proc/PID/mem, ptrace, read()/write() on them): memfd_secret(2)
	 * works here (Linux 5.14+; secretmem.enable=1 before 6.5). */
	int secretmem;
	int secretmem_errno;    /* if not, why: ENOSYS when the kernel lacks
				   it, EPERM or other when it is refused */
	int secretmem_vaults;   /* vaults use it (secretmem and MPKIT_SECRETMEM
				   is not off); 0: vault memory is ordinary,
				   readable by the kernel for the program */
	int mpk__pad;
	uint64_t mpk__reserved[6]; /* for members to come; zero */
};

/* Fill *info.  Works on every machine and never changes any state; when
 * mpkit cannot start (a bad MPKIT_BACKEND or MPKIT_KEYS: EINVAL;
 * MPKIT_BACKEND=hw without keys: ENOTSUP) it still fills the hardware
 * facts and returns -1 with that errno.  EINVAL for info NULL. */
int mpk_info(struct mpk_info *info) MPK__NOTHROW MPK__NONNULL(1) MPK__ACCESS_W(1);

/* Counters for tests and tools; monotonic over the life of the process. */
struct mpk_stats {
	uint64_t mprotect_calls;  /* mprotect()/pkey_mprotect() made by mpkit */
	uint64_t broadcasts;      /* all-thread PKRU rewrites */
	uint64_t faults_reported; /* domain faults seen by the fault handler */
	uint64_t mpk__reserved[13]; /* for counters to come; zero */
};
int mpk_stats_get(struct mpk_stats *stats) MPK__NOTHROW MPK__NONNULL(1) MPK__ACCESS_W(1);

/*
 * Most hardware keys mpkit takes (1..15).  Default 15, or MPKIT_KEYS from
 * the environment.  Lowering below the number of keys held fails with EBUSY.
 */
int mpk_set_key_budget(int keys) MPK__NOTHROW;

/* ---- domains ----------------------------------------------------------- */

typedef struct mpk_domain mpk_domain;

/* Flags for mpk_domain_create(). */
enum {
	/* Open to every thread from the start: rights apply to every thread
	 * of the process (as mpk_set_all()), and threads created later get
	 * them too (hw: they inherit their creator's PKRU, as always; soft:
	 * they hold the domain's process-wide rights). */
	MPK_DOMAIN_SHARED = 1u << 0,
	/* All its memory (mpk_alloc, heaps on it, its vault) is
	 * memfd_secret(2) memory, which the kernel cannot read for the
	 * program: process_vm_readv(), /proc/PID/mem, ptrace, read() and
	 * write() on it fail, with or without mpk_lockdown().  Where the
	 * kernel lacks it (before 5.14; 5.14 to 6.4 without
	 * secretmem.enable=1) the create fails with EOPNOTSUPP; allocations
	 * never fall back to ordinary memory.  The pages are locked and
	 * count against RLIMIT_MEMLOCK (ENOMEM past it), are not inherited
	 * (a forked child finds them zeroed) and cannot be mpk_adopt()ed or
	 * mpk_map_file()d into the domain (EOPNOTSUPP).  See mpk_info(). */
	MPK_DOMAIN_SECRETMEM = 1u << 1,
};

/*
 * Create a domain.  name: 1..63 printable characters (it appears in fault
 * reports and in /proc/PID/maps as [anon:mpk:NAME] where the kernel allows).
 * rights: what the calling thread gets; every other thread gets MPK_NONE,
 * unless flags has MPK_DOMAIN_SHARED (then every thread gets rights).
 * flags: 0, MPK_DOMAIN_SHARED and/or MPK_DOMAIN_SECRETMEM.
 *
 * Domains are not limited by hardware keys: keys are a cache.  With no key
 * free within the budget, a create that gives rights evicts the least
 * recently used domain that can go exactly (every thread holds the same
 * rights to it: its pages get that protection, without a key); failing
 * that, or when rights is MPK_NONE, the domain starts without a key,
 * protected with mprotect() (the union of threads' rights, as on soft)
 * until a thread takes rights to it and it wins a key the same way.  No
 * thread gains or loses access by a move.  See docs/virtual-domains.md.
 *
 * Errors: EINVAL, ENOMEM, EAGAIN (shared, hw: a thread could not be
 * reached; nothing was created, and the key goes back, unless closing it
 * again cannot reach a thread either: then mpkit keeps it, closed, until
 * it can), ENOTSUP / EINVAL from mpk_init.
 */
mpk_domain *mpk_domain_create(const char *name, int rights, unsigned flags) MPK__NOTHROW
	MPK__NODISCARD MPK__NONNULL(1) MPK__ACCESS_R(1);

/*
 * Destroy a domain: free all its memory as mpk_free() does, revoke its key
 * in every thread, then release the key.  Its vault goes with it, but
 * while a heap uses the domain or a secret in it is live, it fails with
 * EBUSY and changes nothing.  Destroying a domain twice is detected
 * (EINVAL) for a while, but like free() it is a bug.
 */
int mpk_domain_destroy(mpk_domain *d) MPK__NOTHROW MPK__NONNULL(1);

/* The domain's name, NULL/EINVAL for a bad domain. */
const char *mpk_domain_name(const mpk_domain *d) MPK__NOTHROW MPK__NONNULL(1);

/* The hardware key the domain holds now, or -1 with errno ENOENT (soft
 * backend, or a domain without a key at the moment: keys move). */
int mpk_domain_key(const mpk_domain *d) MPK__NOTHROW MPK__NONNULL(1);

/* The domain owning addr, or NULL with errno ENOENT. */
mpk_domain *mpk_domain_of(const void *addr) MPK__NOTHROW;

/* ---- domain memory ----------------------------------------------------- */

/* Free a region from mpk_alloc() or mpk_adopt() of domain d: its pages go
 * back to the kernel.  mpk_alloc() memory stays reserved (PROT_NONE, an
 * access there is SIGSEGV with SEGV_ACCERR) for later domain memory to
 * reuse; an adopted range is unmapped.  addr must be the start of that
 * region.  EINVAL if it is not one (a region a heap or vault of d made for
 * itself is not: mpk_heap_destroy() gives it back); EPERM if it is sealed
 * (MPK_LOCK_SEAL). */
int mpk_free(mpk_domain *d, void *addr) MPK__NOTHROW MPK__NONNULL(1) MPK__NONNULL(2);

/*
 * Map len bytes (rounded up to pages) of zeroed memory in domain d.  The
 * memory is readable/writable as far as the domain's rights allow.
 * Errors: EINVAL (bad domain, len 0), ENOMEM (out of memory, or a len no
 * memory can hold: see "Sizes" at the top).
 */
void *mpk_alloc(mpk_domain *d, size_t len) MPK__NOTHROW
	MPK__NODISCARD MPK__DEALLOC(mpk_free, 2) MPK__NONNULL(1);

/*
 * Put an existing private anonymous read/write mapping (page-aligned addr,
 * len a multiple of the page size, wholly mapped) into domain d.  Ownership
 * passes to the domain: mpk_free() or destroying the domain unmaps it.
 * Contents are kept.  Errors: EINVAL (unaligned, zero length, not private
 * anonymous read/write, overlaps memory of a domain), ENOMEM.
 */
int mpk_adopt(mpk_domain *d, void *addr, size_t len) MPK__NOTHROW
	MPK__NODISCARD MPK__NONNULL(1) MPK__NONNULL(2);

/*
 * Map len bytes of the file open on fd, from offset (a multiple of the page
 * size), shared (MAP_SHARED) and read/write as far as domain d's rights
 * allow: stores reach the file, as with mmap(); msync() it for
 * durability.  The mapping belongs to d: mpk_free() or destroying the
 * domain unmaps it.  A regular file must hold offset + len bytes already
 * (ftruncate() first): pages past its end would raise SIGBUS.
 * Errors: EINVAL (bad domain, len 0, offset negative or not
 * aligned, the file too short), EBADF (fd not open), EACCES (fd not open
 * for reading and writing), ENODEV (a file that cannot be mapped), ENOMEM;
 * nothing is mapped then.
 */
void *mpk_map_file(mpk_domain *d, int fd, off_t offset, size_t len) MPK__NOTHROW
	MPK__NODISCARD MPK__DEALLOC(mpk_free, 2) MPK__NONNULL(1);

/* ---- rights of the calling thread ---------------------------------------
 *
 * On hw, for a domain holding a key, these touch the calling thread's PKRU
 * only: no system call, no lock, no allocation.  A domain without a key at
 * the moment (virtual domains: more domains than keys) goes through a lock;
 * taking rights to it makes it try to win a key (see mpk_domain_create()).
 * On soft they change the union of all threads' rights and call mprotect()
 * only when that union changes.
 */

/* Set the calling thread's rights to d.  Errors: EINVAL (bad domain or
 * rights); where rights take mprotect() (soft, or a domain without a key)
 * ENOMEM or another mprotect() error, and nothing changed.  The same holds
 * for mpk_enter() and mpk_leave(). */
int mpk_set(mpk_domain *d, int rights) MPK__NOTHROW MPK__NODISCARD MPK__NONNULL(1);

/* The calling thread's rights to d (MPK_NONE/READ/RW), or -1/EINVAL. */
int mpk_get(const mpk_domain *d) MPK__NOTHROW MPK__NONNULL(1);

/*
 * From a signal handler (SA_SIGINFO; ucontext its third argument): set
 * the rights to d of the code the signal interrupted, which it holds once
 * the handler returns.  hw: the PKRU image the kernel saved in the signal
 * frame (rights the handler sets with mpk_set() are its own, thrown away
 * at its return); soft, and a domain without a key: as mpk_set().  The
 * handler's own rights stay as they were.  Async-signal-safe as mpk_set()
 * is (see its caveat for soft).  Errors: EINVAL (bad domain or rights,
 * ucontext NULL), ENOTSUP (hw: the frame holds no PKRU image), as
 * mpk_set().
 */
int mpk_set_interrupted(mpk_domain *d, int rights, void *ucontext) MPK__NOTHROW MPK__NODISCARD
	MPK__NONNULL(1);

/* A saved right, from mpk_enter(), for mpk_leave(). */
typedef struct mpk_scope {
	mpk_domain *domain;
	int saved; /* the rights held before mpk_enter(), or -1 if it failed */
} mpk_scope;

/*
 * Take rights to d for a scope and remember what was held before.
 * mpk_leave() restores exactly that, so scopes nest, also on one domain.
 * On failure scope.saved is -1 and errno is set; leaving it is a no-op.
 */
mpk_scope mpk_enter(mpk_domain *d, int rights) MPK__NOTHROW MPK__NODISCARD MPK__NONNULL(1);
int mpk_leave(mpk_scope *scope) MPK__NOTHROW MPK__NODISCARD MPK__NONNULL(1);

/*
 * Block scopes: rights to d inside the block, restored on every way out of
 * it (the end, break, continue, return, goto) but longjmp.  break and
 * continue leave the scope itself, not a loop around it.
 *
 * MPK_WITH_ELSE runs its else branch, with errno set, when mpk_enter()
 * fails (a bad domain or rights; ENOMEM where rights take mprotect()):
 *
 *	MPK_WITH_ELSE(keys, MPK_READ) {
 *		encrypt(blk, k);
 *	} else {
 *		perror("mpk_enter");
 *		return -1;
 *	}
 *
 * MPK_WITH has no else: when mpk_enter() fails it skips the body, with
 * errno set, and the program goes on after it.  Define MPK_WITH_ABORTS
 * (to anything) before including mpkit.h and it prints the error on
 * stderr and aborts instead, for programs where a skipped body is never
 * right.  MPK_WITH_ELSE is the same with both definitions.
 *
 *	MPK_WITH(keys, MPK_READ) {
 *		encrypt(blk, k);
 *	}
 */
#define MPK__CAT2(a, b) a##b
#define MPK__CAT(a, b) MPK__CAT2(a, b)
#define MPK_WITH(d, rights) MPK__WITH(d, rights, MPK__CAT(mpk__scope_, __LINE__))
#ifdef MPK_WITH_ABORTS
/* saved is -1 only when mpk_enter() failed: not after the body left. */
#define MPK__WITH_OK(s)                                                      \
	((s).domain || ((s).saved < 0 && (mpk__scope_failed(&(s), __FILE__, __LINE__), 0)))
#else
#define MPK__WITH_OK(s) ((s).domain)
#endif
/* The leave at the end has no one to report to: where it fails (soft, an
 * mprotect() error) the thread keeps the block's rights. */
#define MPK__WITH(d, rights, s)                                              \
	for (mpk_scope s __attribute__((cleanup(mpk__scope_end))) =          \
		     mpk_enter((d), (rights));                                \
	     MPK__WITH_OK(s); (void)!mpk_leave(&s), s.domain = NULL)
#define MPK_WITH_ELSE(d, rights)                                             \
	MPK__WITH_ELSE(d, rights, MPK__CAT(mpk__scope_, __LINE__),            \
		       MPK__CAT(mpk__once_, __LINE__))
#define MPK__WITH_ELSE(d, rights, s, once)                                   \
	for (mpk_scope s __attribute__((cleanup(mpk__scope_end))) =          \
		     mpk_enter((d), (rights)),                                \
		     *once = &s;                                              \
	     once; once = NULL)                                               \
		if (s.domain)

/* Used by MPK_WITH with MPK_WITH_ABORTS: prints the failure, aborts. */
__attribute__((noreturn)) void mpk__scope_failed(const mpk_scope *scope, const char *file, int line)
	MPK__NOTHROW;

/* Used by MPK_WITH's cleanup; also fine to call directly. */
void mpk__scope_cleanup(mpk_scope *scope) MPK__NOTHROW;

/* MPK_WITH's cleanup, inline: a scope left the usual way (the body ran
 * to its end, domain NULL) costs one test and no call; only a scope left
 * by break, return or goto calls into the library. */
static inline void
mpk__scope_end(mpk_scope *scope)
{
	if (scope->domain)
		mpk__scope_cleanup(scope);
}

/* ---- rights of every thread ---------------------------------------------- */

/*
 * Set every thread's rights to d, process-wide: each thread of the process,
 * including threads blocked in system calls and threads in the middle of
 * their own mpk_set()/enter/leave, has exactly these rights to d when the
 * call returns (a thread's own later mpk_set()/mpk_leave()/restore changes
 * them again, for itself).  Threads created later inherit them (hw: from
 * their creator's PKRU; soft: they hold d's process-wide rights).
 * Concurrent calls from several threads are serialised; none is lost.
 *
 * hw: every thread is signalled (SIGRTMAX-2) and its saved PKRU edited;
 * this costs a few microseconds per thread.  soft: one mprotect() per
 * region at most; after it every thread holds rights until it sets its
 * own, and the pages stay at least that open until the next mpk_set_all()
 * (see README).  Not async-signal-safe.
 *
 * Errors: EINVAL (bad domain or rights), ENOMEM/mprotect errors (soft,
 * nothing changed), EAGAIN (hw: a thread kept SIGRTMAX-2 blocked for over
 * 100 ms or did not answer within 5 s; the threads reached, and the caller,
 * are given back what they held, so nothing changed; call again).
 */
int mpk_set_all(mpk_domain *d, int rights) MPK__NOTHROW MPK__NODISCARD MPK__NONNULL(1);

/* ---- saving and restoring a thread's rights ------------------------------
 *
 * For fibers, coroutines and user-level schedulers: save the calling
 * thread's rights to every domain as one value, restore them later on the
 * same or another thread.
 *
 *	mpk_rights_t a, b;
 *	mpk_rights_save(&a);            ... switch fibers ...
 *	mpk_rights_restore(&b);         the thread now holds b's rights
 *
 * A save covers the domains that live when it is made.  A restore sets the
 * calling thread's rights to each of those domains that still lives to what
 * was saved, and leaves every other domain (created since) as it is;
 * entries of domains destroyed since are ignored.  It overrides
 * mpk_set_all() made in between, for the calling thread, like mpk_set().
 * hw: only the PKRU bits of keys mpkit owns change (never key 0, never a
 * key of the application), in one restartable write; the value lives in
 * the mpk_rights_t, no allocation.  Domains without a key (soft backend,
 * or virtual domains past the keys on hw): those held above MPK_NONE are
 * copied to the heap (free it with mpk_rights_dispose()), the rest restore
 * to MPK_NONE; restore updates the union and mprotect()s as needed, all or
 * nothing.  Both calls cost the domains held above MPK_NONE, not all (a
 * restore on the saving thread with nothing moved since: only the keys).
 * A domain that moved between a key and none since the save is restored
 * the way it is held now.
 */
typedef struct mpk_rights {
	uint64_t mpk__opaque[32];
} mpk_rights_t;

/* Save the calling thread's rights into *r (overwrites it: dispose of an
 * earlier save first).  Errors: EINVAL (r NULL), ENOMEM (soft). */
int mpk_rights_save(mpk_rights_t *r) MPK__NOTHROW MPK__NODISCARD MPK__NONNULL(1) MPK__ACCESS_W(1);

/* Make the calling thread's rights those saved in *r (which stays valid:
 * restore it as often as wanted).  Errors: EINVAL (r NULL or not a save),
 * ENOMEM and mprotect() errors (soft; nothing changed). */
int mpk_rights_restore(const mpk_rights_t *r) MPK__NOTHROW
	MPK__NODISCARD MPK__NONNULL(1) MPK__ACCESS_R(1);

/* Free what a save holds (soft) and invalidate *r; NULL or an invalid *r
 * is a no-op.  Always 0. */
int mpk_rights_dispose(mpk_rights_t *r) MPK__NOTHROW;

/* ---- faults ------------------------------------------------------------ */

/* What the fault handler knows about a stray access to domain memory. */
struct mpk_fault {
	mpk_domain *domain;      /* the domain whose memory was touched */
	const char *domain_name;
	void *addr;              /* the faulting address */
	size_t offset;           /* from the start of the region; region_len or
				  * more: in the guard page after it (an
				  * overflow), and addr below region: in the
				  * one before it */
	void *region;            /* start of the region */
	size_t region_len;       /* its length in bytes */
	int write;               /* 1 write, 0 read */
	int pkey;                /* si_pkey (hw), -1 on soft */
	int si_code;             /* SEGV_PKUERR (hw) or SEGV_ACCERR (soft) */
	pid_t tid;               /* the faulting thread */
	int rights;              /* that thread's rights to the domain then */
};

enum {
	MPK_FAULT_ABORT = 0, /* print the report and abort() */
	MPK_FAULT_RETRY = 1, /* the handler fixed rights: retry the access */
};

/*
 * Called in signal context (only async-signal-safe work; mpk_set() and
 * mpk_get() are allowed and act on the interrupted thread's rights: on a
 * domain without a key, and on soft, mpk_set() takes mpkit's lock, which is
 * safe for a fault in your code but not one inside an mpkit call).
 * Return MPK_FAULT_RETRY to resume the faulting access, MPK_FAULT_ABORT to
 * have the report printed and the process aborted.
 */
typedef int (*mpk_fault_fn)(const struct mpk_fault *fault, void *arg);

/*
 * Install the SIGSEGV handler (opt-in).  Faults in domain memory produce a
 * report on stderr (domain, address and offset, read/write, key, thread,
 * backtrace) and abort, or go to fn if it is not NULL.  Faults that are not
 * mpkit's go to the handler that was installed before, or the default
 * action.  Calling it again replaces fn/arg.  Errors: errno of sigaction().
 */
int mpk_fault_handler_install(mpk_fault_fn fn, void *arg) MPK__NOTHROW;

/* Restore the previous SIGSEGV handler. EINVAL if none was installed. */
int mpk_fault_handler_remove(void) MPK__NOTHROW;

/* Format the report for fault into buf (async-signal-safe), like
 * snprintf(): it returns the length of the whole report, writes at most
 * size bytes, NUL included.  0 with EINVAL for fault NULL, or buf NULL with
 * size not 0. */
size_t mpk_fault_format(const struct mpk_fault *fault, char *buf, size_t size) MPK__NOTHROW
	MPK__NONNULL(1) MPK__ACCESS_R(1) MPK__ACCESS_WS(2, 3);

/* ---- where reports go -------------------------------------------------
 *
 * Fault and misuse reports (the handlers' default action) are written
 * whole, one write() per report, to stderr, or where MPKIT_REPORT says:
 * "fd:N" (an open file descriptor) or a file's path, appended to and
 * opened at the first report, with %p replaced by the process id.  A bad
 * value makes mpk_init() fail (EINVAL), as for every MPKIT_* variable; a
 * setuid or setgid program ignores it.  The frames of a report's backtrace
 * are module+offset lines that `mpkit symbolize` (and `mpkit run`) turn
 * into functions and FILE:LINE.
 */

/* Receives each report, whole: len bytes of text (several lines, each
 * ending in a newline; not NUL-terminated).  Called where the report is
 * made, which for a fault is the SIGSEGV handler: it must be
 * async-signal-safe (write(), no malloc, no stdio, no locks the
 * interrupted code may hold), and it must return: the process is aborted
 * after it. */
typedef void (*mpk_report_fn)(const char *text, size_t len, void *arg);

/* Send reports to fn(text, len, arg) instead of MPKIT_REPORT or stderr;
 * fn NULL sends them back there.  Errors: EINVAL (arg without fn), or
 * what mpk_init() reports. */
int mpk_report_sink(mpk_report_fn fn, void *arg) MPK__NOTHROW;

/* Write len bytes of text where reports go (the sink, MPKIT_REPORT or
 * stderr), as part of a report of one's own, e.g. from a fault callback
 * before it returns MPK_FAULT_ABORT.  Async-signal-safe.  Returns 0;
 * EINVAL for text NULL with len not 0. */
int mpk_report_write(const char *text, size_t len) MPK__NOTHROW MPK__ACCESS_RS(1, 2);

/* ---- code: JIT (W^X) and execute-only memory ---------------------------
 *
 * See docs/code.md.
 */

/*
 * len bytes (rounded up to pages) of zeroed code memory in domain d, for a
 * JIT: on hw mapped read+write+execute with d's key, so a thread writes it
 * only while it holds MPK_RW to d (inside MPK_WITH(d, MPK_RW)); every
 * other thread runs it meanwhile (keys never govern instruction fetch) and
 * reads it as its rights allow.  Create d with MPK_DOMAIN_SHARED and
 * MPK_READ so that every thread can run it, then open it to write:
 *
 *	mpk_domain *jit = mpk_domain_create("jit", MPK_READ, MPK_DOMAIN_SHARED);
 *	uint8_t *code = mpk_code_alloc(jit, 4096);
 *	MPK_WITH(jit, MPK_RW) { emit(code); }
 *	((int (*)(void))code)();
 *
 * Without a key (soft backend, or a virtual domain on hw) the pages flip by
 * mprotect() between read+execute (no thread holds MPK_RW) and read+write
 * (one does), never writable and executable at once, process-wide; a
 * thread that runs into the code while another writes waits in mpkit's
 * SIGSEGV handler (installed by this call) until the window closes, and
 * with MPK_NONE held by every thread the code cannot run at all.  Free it
 * with mpk_free().  x86 keeps instruction caches coherent; a thread that
 * runs code another thread just wrote needs no more than the release and
 * acquire that told it to.  Errors: EINVAL (bad domain, len 0), ENOMEM
 * (also a len no memory can hold), sigaction() errors.
 */
void *mpk_code_alloc(mpk_domain *d, size_t len) MPK__NOTHROW
	MPK__NODISCARD MPK__DEALLOC(mpk_free, 2) MPK__NONNULL(1);

/*
 * Make [addr, addr+len) execute-only: it can be run, not read or written
 * (mprotect(PROT_EXEC), which the kernel builds from a protection key of
 * its own; reading faults with SEGV_PKUERR and that key).  addr
 * page-aligned, len rounded up to pages, the range wholly mapped with one
 * protection, not domain memory.  The kernel takes its key from the same
 * 15 as mpkit: when mpkit holds them all, one domain gives its key back
 * (evicted as virtual domains are, see mpk_domain_create()) so the pages
 * are never left readable.  mprotect() with PROT_READ undoes it.
 * Errors: EINVAL (bad arguments, domain memory, mixed protections),
 * ENOMEM (not mapped), ENOTSUP (soft backend: without keys PROT_EXEC is
 * readable on x86), ENOSPC (no key could be given to the kernel; the
 * range is as it was), mprotect() errors.
 */
int mpk_exec_only(void *addr, size_t len) MPK__NOTHROW MPK__NODISCARD MPK__NONNULL(1);

/* The kernel's execute-only key in this process (after a successful
 * mpk_exec_only()), or -1 with ENOENT. */
int mpk_exec_only_key(void) MPK__NOTHROW;

/* ---- audit ---------------------------------------------------------------
 *
 * A page keeps its key only as long as nobody maps over it: mmap(MAP_FIXED),
 * mremap(), mprotect() or pkey_mprotect() by the program (or a library in
 * it) silently replaces the key or the protection mpkit gave domain memory.
 * mpk_audit() compares what mpkit expects with what the kernel reports in
 * /proc/self/smaps (ProtectionKey and the permissions); `mpkit maps PID
 * --check` does the same for another process.  See mpk_audit(3).
 */

/* One range whose pages are not as mpkit expects. */
struct mpk_audit_entry {
	void *start, *end;          /* [start, end), within one mapping */
	const mpk_domain *domain;   /* the domain, NULL: memory mpkit keeps
				       reserved (freed, between regions) */
	char domain_name[64];       /* its name ("" reserved memory) */
	int expected_key;           /* the key the pages should carry (0:
				       none), -1 any (reserved memory) */
	int found_key;              /* ProtectionKey, -1: the kernel does not
				       report keys here, or nothing is mapped */
	int expected_prot;          /* PROT_READ/WRITE/EXEC they should have */
	int found_prot;             /* what they have, -1: nothing is mapped */
	uint64_t mpk__reserved[4];  /* for members to come; zero */
};

/*
 * Check every region of every domain, and the address space mpkit keeps
 * reserved for them, against /proc/self/smaps.  A region should carry its
 * domain's key and be readable and writable (executable too for code);
 * a domain without a key (soft backend, or a virtual domain) should carry
 * no key (key 0 where the kernel reports keys) and the protection its
 * rights give now: on soft the union of what every thread holds at the
 * moment of the call (mpk_set_all() included), which changes as threads
 * change rights.  Reserved memory should be PROT_NONE, any key.  The
 * first max mismatches are stored in out[], in address order; returns how
 * many there are in all (0: none), or -1 with errno: EINVAL (out NULL and
 * max not 0), an error opening or reading /proc/self/smaps (ENOENT
 * without /proc, EPERM after MPK_LOCK_NO_OPEN), ENOMEM, EAGAIN (regions
 * or rights changed throughout 100 attempts), or mpk_init()'s.  The maps
 * are read while no rights change that takes mprotect() and no key move
 * can run (those wait); an allocation half done in another thread can
 * still look wrong, so a mismatch is looked at again (three looks at
 * most) before it is reported.  Without keys (soft), a mapping put over a
 * region with the very protection its rights give cannot be told from
 * the region.  Changes nothing.
 */
int mpk_audit(struct mpk_audit_entry *out, size_t max) MPK__NOTHROW;

/* One line (no newline) describing e into buf, as snprintf(): its
 * length, or 0 with EINVAL (e NULL, or buf NULL with size not 0). */
size_t mpk_audit_format(const struct mpk_audit_entry *e, char *buf, size_t size) MPK__NOTHROW;

/* ---- watchpoints ----------------------------------------------------------
 *
 * Report every write (and optionally read) to a range, with the faulting
 * instruction and a backtrace, then let the access complete: the program
 * runs on.  See docs/watch.md.
 */

enum {
	MPK_WATCH_WRITE = 1u << 0, /* report writes */
	MPK_WATCH_READ = 1u << 1,  /* report reads */
	/* Call fn once the access has completed, with the watched bytes as
	 * they were before it and as they are after it (old_value,
	 * new_value). */
	MPK_WATCH_VALUES = 1u << 2,
};

/* The most bytes old_value and new_value hold. */
#define MPK_WATCH_VALUE_MAX 64

struct mpk_watch_hit {
	int id;              /* what mpk_watch() returned */
	void *addr;          /* the address accessed (the first byte) */
	size_t offset;       /* from the start of the watched range */
	int write;           /* 1 write, 0 read */
	void *ip;            /* the faulting instruction */
	pid_t tid;           /* the thread */
	void *const *frames; /* backtrace from the faulting instruction out */
	int nframes;
	/* MPK_WATCH_VALUES: value_len bytes from value_addr (the whole range
	 * if it is at most MPK_WATCH_VALUE_MAX bytes long, else from addr to
	 * at most MPK_WATCH_VALUE_MAX bytes on), before the instruction and
	 * after it; else NULL and 0. */
	void *value_addr;
	const void *old_value;
	const void *new_value;
	size_t value_len;
};

/* Called in signal context, in the accessing thread, before the access
 * completes, or with MPK_WATCH_VALUES right after it (async-signal-safe
 * work only; the watched memory reads as the thread could read it). */
typedef void (*mpk_watch_fn)(const struct mpk_watch_hit *hit, void *arg);

/*
 * Watch [addr, addr+len): fn(hit, arg) for every access flags names
 * (MPK_WATCH_WRITE and/or MPK_WATCH_READ) whose address falls inside;
 * with MPK_WATCH_VALUES too, once the instruction has run, with the
 * bytes before and after it.
 * Pages are the unit of protection: accesses to the rest of the page go
 * on silently, at the same cost.  hw: the pages carry the key of a domain
 * of mpkit's own and the faulting thread alone gets them for one
 * instruction (trap flag); soft, or hw with no key free: mprotect(), and
 * the page is open to every thread for that instruction.  The memory must
 * be readable and writable, not domain memory, not a stack signals land
 * on; system calls that write to it fail with EFAULT.  Installs mpkit's
 * SIGSEGV handler and a SIGTRAP handler (others' traps are passed on).
 * Returns a watch id (>= 0).  Errors: EINVAL (addr NULL, len 0, flags
 * unknown or without READ or WRITE, fn NULL, domain memory, not read-write), ENOMEM (not mapped), ENOSPC
 * (64 watches, or 256 pages, at once), EAGAIN (hw: a thread could not be
 * reached), mprotect() errors.
 */
int mpk_watch(void *addr, size_t len, unsigned flags, mpk_watch_fn fn, void *arg) MPK__NOTHROW
	MPK__NODISCARD MPK__NONNULL(1) MPK__NONNULL(4);

/* Stop watch id; its pages are given back as they were once no watch
 * covers them.  Errors: EINVAL (not a live watch), mprotect() errors. */
int mpk_unwatch(int id) MPK__NOTHROW;

/* ---- guarding a loaded library (docs/guard.md) ----------------------------
 *
 * What `mpkit guard --lib NAME -- PROG` does, for a program that links
 * libmpkit.so: the library's writable data past RELRO goes into a domain
 * "guard:FILE" that the program may read and not write (flags 0), or not
 * even read (MPK_GUARD_DENY_ALL), and each function the library exports
 * goes through a gate that opens the domain to the calling thread while it
 * runs.  A write from outside faults, and mpkit's report names the domain
 * after a line naming the symbol written.  There is no way back.
 */
enum {
	/* Outside the library its data is not readable either. */
	MPK_GUARD_DENY_ALL = 1u << 0,
	/* Report each access from outside and let it through; the list (the
	 * writer's backtrace, the symbol written) at exit. */
	MPK_GUARD_REPORT = 1u << 1,
};

/*
 * Guard the loaded library NAME (its file name, "libz.so.1", or that
 * name up to a dot, "libz").  The work is done by the helper of `mpkit
 * guard`, libmpkit-guard.so, opened with dlopen() (and kept): from
 * MPKIT_GUARD_HELPER if set, else from the helpers' directory of this
 * installation (LIBEXECDIR/mpkit), else beside libmpkit.so.  Each call
 * another library, with flags of its own, each in a domain of its own, up
 * to 8 in a process (with those `mpkit guard --lib` names); it stays
 * loaded (dlclose() leaves it).
 * The helper is opened, not preloaded, so it wraps none of the program's
 * calls, and what `mpkit guard` covers through those is not covered:
 * blocks the library allocates stay outside the domain (--heap); a thread
 * that a callback starts while inside the library starts with the domain
 * open (hw), and a longjmp() out of a callback leaves it open; the
 * library is not guarded again if something loads another copy.
 * Returns 0.  Errors, with nothing changed (nor the libraries guarded
 * before): EINVAL (name NULL or empty, flags unknown), ENOENT (no such
 * library loaded), EEXIST (it is guarded already), EBUSY (`mpkit guard
 * --lib` names it, to be guarded when dlopen() loads it), ENOSPC (8
 * guarded already), ENOTSUP (the helper not found or not loadable;
 * libmpkit linked statically; or the library has no writable data past
 * RELRO of its own page).  Other errors (ENOMEM, a mapping that could not
 * be moved) come from the guarding itself and may leave that library
 * partly guarded; a later call for it then fails with EEXIST.
 */
int mpk_guard_library(const char *name, unsigned flags) MPK__NOTHROW MPK__NODISCARD;

/* ---- guarded heaps -------------------------------------------------------
 *
 * A heap is a general-purpose allocator whose blocks live in one domain, so
 * a thread without rights to the domain can neither read nor write them.
 * Small blocks share pages by size class; large ones are page runs; memory
 * goes back to the kernel as the heap shrinks.  The allocator's metadata
 * lives apart from every block, in one area shared by all heaps and vaults:
 * on hw a domain of its own ("heap-meta", one hardware key however many
 * heaps), open only for the thread running an allocator call.  On soft,
 * closing it would cost two mprotect() per call, so there it is left open
 * unless MPKIT_HEAP_META=closed (MPKIT_HEAP_META=open|closed|auto; open on
 * hw saves the key).  See README for the costs.
 *
 * Every call works whatever rights the calling thread holds to the heap's
 * domain and leaves them exactly as they were; calls are thread-safe (not
 * async-signal-safe).  Blocks are 16-byte aligned.  A domain with a heap
 * cannot be destroyed (EBUSY) until the heap is.
 *
 * Misuse (a double free, a pointer from another heap or from nowhere, a
 * corrupted block header) goes to the misuse handler below, which by
 * default prints a report and aborts.  If a handler returns, the call fails
 * with EINVAL and changes nothing.  Detection is best effort: once a freed
 * block's address is handed out again, a second free of the old pointer
 * frees the new block, as with any allocator.
 *
 * Besides the codes each call lists, a heap or vault call can fail with
 * what mpk_init() reports, and, where opening the metadata or the domain
 * takes mprotect() (soft, or a domain without a key), with its error
 * (ENOMEM); nothing changes then.
 */
typedef struct mpk_heap mpk_heap;

enum {
	/* Each block gets pages of its own, between two guard pages, and
	 * ends flush against the one after it: an overflow faults at once
	 * (past the size rounded up to the alignment, 16). */
	MPK_HEAP_GUARDED = 1u << 0,
	/* The same, but the block starts flush against the guard page
	 * before it: an underflow faults at once. */
	MPK_HEAP_GUARDED_BELOW = 1u << 1,
	/* A block's bytes are zeroed as it is freed, so that what the
	 * program kept there does not outlive it (with either of the above,
	 * or alone). */
	MPK_HEAP_WIPE = 1u << 2,
};

/*
 * A heap whose blocks live in d.  flags: 0, MPK_HEAP_GUARDED or
 * MPK_HEAP_GUARDED_BELOW, either with MPK_HEAP_WIPE or not.  Errors: EINVAL (bad domain or flags, bad
 * MPKIT_HEAP_META), ENOMEM.  On hw the metadata domain (made with the
 * first heap) is virtual like any other: with no key free it is protected
 * with mprotect() until it wins one back, never an error.
 */
mpk_heap *mpk_heap_create(mpk_domain *d, unsigned flags) MPK__NOTHROW
	MPK__NODISCARD MPK__NONNULL(1);

/* Destroy h: every block and all its metadata go; the domain stays.  A
 * destroyed heap is detected (EINVAL) for a while, but like free() it is a
 * bug to use it.  Errors: EINVAL (and see above). */
int mpk_heap_destroy(mpk_heap *h) MPK__NOTHROW MPK__NONNULL(1);

/* The domain of h, or NULL with EINVAL. */
mpk_domain *mpk_heap_domain(const mpk_heap *h) MPK__NOTHROW MPK__NONNULL(1);

/* free(): NULL is a no-op.  Errors: EINVAL (bad heap, or misuse reported
 * to a handler that returned). */
int mpk_heap_free(mpk_heap *h, void *p) MPK__NOTHROW MPK__NONNULL(1);

/*
 * malloc(), calloc(), aligned_alloc() and realloc() for heap h.  Size 0
 * gives a block of its own (usable size at least 1).  realloc() to 0 is
 * realloc() to 1: it returns a new block and frees the old one (it never
 * just frees, unlike some libcs).  realloc() keeps the bytes up to the size
 * last asked for, not the usable size beyond it.  realloc(h, NULL, n) is
 * malloc(); when it fails the old block is untouched.  Errors: EINVAL (bad heap; for aligned_alloc
 * an alignment that is not a power of two up to 2 MiB), ENOMEM (out of
 * memory, or a size no memory can hold).
 */
void *mpk_heap_malloc(mpk_heap *h, size_t size) MPK__NOTHROW
	MPK__NODISCARD MPK__ALLOC_SIZE(2) MPK__DEALLOC(mpk_heap_free, 2)
	MPK__NONNULL(1);
void *mpk_heap_calloc(mpk_heap *h, size_t n, size_t size) MPK__NOTHROW
	MPK__NODISCARD MPK__ALLOC_SIZE2(2, 3) MPK__DEALLOC(mpk_heap_free, 2)
	MPK__NONNULL(1);
void *mpk_heap_aligned_alloc(mpk_heap *h, size_t align, size_t size) MPK__NOTHROW
	MPK__NODISCARD MPK__ALLOC_SIZE(3) MPK__ALLOC_ALIGN(2)
	MPK__DEALLOC(mpk_heap_free, 2) MPK__NONNULL(1);
void *mpk_heap_realloc(mpk_heap *h, void *p, size_t size) MPK__NOTHROW
	MPK__NODISCARD MPK__ALLOC_SIZE(3) MPK__DEALLOC(mpk_heap_free, 2) MPK__NONNULL(1);

/* Bytes usable at p (at least the size asked for), or 0 with EINVAL (bad
 * heap, p NULL, misuse reported to a handler that returned).  The
 * compiler knows the size asked for (alloc_size): with _FORTIFY_SOURCE a
 * copy past it aborts, so realloc to use more. */
size_t mpk_heap_usable_size(mpk_heap *h, const void *p) MPK__NOTHROW
	MPK__NONNULL(1) MPK__NONNULL(2);

struct mpk_heap_stats {
	size_t blocks;   /* live blocks */
	size_t bytes;    /* their usable bytes */
	size_t mapped;   /* domain memory mapped for blocks (guard pages not counted) */
	unsigned flags;  /* as created */
	int meta_closed; /* the metadata is closed between calls */
	size_t meta_opens; /* times calls on this heap opened the closed metadata
			    * (2 WRPKRU each on hw; this call counts too) */
	size_t mapped_peak; /* the most mapped has been since the heap was made */
	uint64_t mpk__reserved[2]; /* for members to come; zero */
};
/* Fill *stats.  Errors: EINVAL (bad heap, stats NULL). */
int mpk_heap_stats_get(mpk_heap *h, struct mpk_heap_stats *stats) MPK__NOTHROW
	MPK__NONNULL(1) MPK__NONNULL(2) MPK__ACCESS_W(2);

/* ---- secrets --------------------------------------------------------------
 *
 * For keys and passwords, the way sodium_malloc() is used, minus its four
 * pages and its system calls per secret: each domain has a vault, made on
 * its first secret.  Secrets share pages (a 32-byte key takes 32 bytes),
 * locked in memory (mlock), left out of core dumps (MADV_DONTDUMP), zero in
 * a forked child and wiped when freed.  Where the kernel has memfd_secret(2)
 * (mpk_info()'s secretmem_vaults), vault pages are memfd_secret pages: the
 * kernel cannot read them for the program either, so process_vm_readv(),
 * /proc/PID/mem, ptrace and read()/write() on a secret fail even without
 * mpk_lockdown(); elsewhere they are ordinary pages, unless
 * MPKIT_SECRETMEM=require or the domain has MPK_DOMAIN_SECRETMEM: then
 * mpk_secret_alloc() fails with EOPNOTSUPP instead.  A secret is as
 * open as its domain: create the domain with MPK_NONE and every thread is
 * closed to it until it opens it (mpk_secret_readonly(), or MPK_WITH(d,
 * MPK_READ)), for itself only on hw.  Opening one secret opens every secret
 * of its domain: put secrets that must open apart in domains apart (no
 * guard page separates the secrets of a vault).  The calls leave the
 * caller's rights as they were, and a domain with live secrets cannot be
 * destroyed (EBUSY); its vault goes with it.
 */

/* Wipe and free a secret; NULL is a no-op.  Misuse (double free, not a
 * secret) goes to the misuse handler.  Errors: EINVAL (after a handler
 * returned). */
int mpk_secret_free(void *p) MPK__NOTHROW;

/*
 * A zeroed secret of len bytes in d's vault, 16-byte aligned.  Errors:
 * EINVAL (bad domain, len 0, bad MPKIT_HEAP_META), ENOMEM (out of memory,
 * a len no memory can hold, or locking the pages would pass
 * RLIMIT_MEMLOCK, the most memory a process without CAP_IPC_LOCK may
 * lock), EPERM (mlock() refused: RLIMIT_MEMLOCK is 0 and the process
 * lacks CAP_IPC_LOCK), EAGAIN (mlock() could not lock every page),
 * EOPNOTSUPP (the kernel lacks memfd_secret(2) and MPKIT_SECRETMEM=require
 * or the domain has MPK_DOMAIN_SECRETMEM), or an error of madvise()
 * (EINVAL before Linux 4.14, which lacks MADV_WIPEONFORK).  memfd_secret
 * memory is charged to RLIMIT_MEMLOCK as the vault maps it: the pages it
 * takes of a 1 MiB chunk, at least doubling the part in use (a big secret:
 * its own pages): ENOMEM past it.  Nothing is allocated when it fails.
 */
void *mpk_secret_alloc(mpk_domain *d, size_t len) MPK__NOTHROW
	MPK__NODISCARD MPK__ALLOC_SIZE(2) MPK__DEALLOC(mpk_secret_free, 1) MPK__NONNULL(1);

/* An array of n secrets of size bytes each, as one zeroed secret of
 * n * size bytes (libsodium's sodium_allocarray()): ENOMEM when n * size
 * overflows, EINVAL when n or size is 0, else as mpk_secret_alloc(). */
void *mpk_secret_allocarray(mpk_domain *d, size_t n, size_t size) MPK__NOTHROW
	MPK__NODISCARD MPK__ALLOC_SIZE2(2, 3) MPK__DEALLOC(mpk_secret_free, 1)
	MPK__NONNULL(1);

/* The calling thread's rights to the domain of secret p (every secret in
 * it): none, read-only, read-write.  mpk_set() on mpk_domain_of(p), for a
 * live secret only.  Errors: EINVAL (p is not a live secret). */
int mpk_secret_noaccess(void *p) MPK__NOTHROW MPK__NODISCARD MPK__NONNULL(1);
int mpk_secret_readonly(void *p) MPK__NOTHROW MPK__NODISCARD MPK__NONNULL(1);
int mpk_secret_readwrite(void *p) MPK__NOTHROW MPK__NODISCARD MPK__NONNULL(1);

/* ---- misuse of heaps and vaults ------------------------------------------ */

enum {
	MPK_MISUSE_DOUBLE_FREE = 1, /* the block was freed already */
	MPK_MISUSE_FOREIGN = 2,     /* it belongs to another heap or a vault */
	MPK_MISUSE_WILD = 3,        /* no heap or vault handed it out */
	MPK_MISUSE_CORRUPT = 4,     /* its header was overwritten */
};

struct mpk_misuse {
	int kind;                      /* MPK_MISUSE_* */
	const char *call;              /* the mpkit function, e.g. "mpk_heap_free" */
	void *addr;                    /* the pointer it was given */
	mpk_heap *heap;                /* the heap it was given (NULL: a secret call) */
	mpk_domain *domain;            /* that heap's domain, or the vault's */
	const char *domain_name;
	mpk_heap *owner;               /* FOREIGN: the heap p belongs to (NULL: a vault) */
	mpk_domain *owner_domain;      /* FOREIGN: the domain p belongs to */
	const char *owner_domain_name;
};

typedef void (*mpk_misuse_fn)(const struct mpk_misuse *misuse, void *arg);

/*
 * Replace the misuse handler; fn NULL restores the default, which prints
 * the report (mpk_misuse_format() and a backtrace) on stderr and aborts.
 * It runs in the thread that made the call, with that thread's rights, and
 * may call mpkit; if it returns, the call fails with EINVAL and changes
 * nothing.  Errors: EINVAL (arg without fn).
 */
int mpk_misuse_handler_set(mpk_misuse_fn fn, void *arg) MPK__NOTHROW;

/* Format the report for misuse into buf; returns its length (as snprintf),
 * or 0 with EINVAL. */
size_t mpk_misuse_format(const struct mpk_misuse *misuse, char *buf, size_t size) MPK__NOTHROW
	MPK__NONNULL(1) MPK__ACCESS_R(1) MPK__ACCESS_WS(2, 3);

/*
 * Lockdown: freeze the process so that a closed domain stays closed against
 * system calls and stray code, not only stray loads (docs/threat-model.md).
 * Irreversible.  Always: a seccomp filter on every thread (ptrace,
 * process_vm_readv/writev, io_uring, new PROT_EXEC, MADV_DODUMP/KEEPONFORK,
 * 32-bit and x32 entry denied; pkey calls and mprotect/mmap(MAP_FIXED)/
 * munmap/mremap/madvise of domain memory denied unless mpkit makes them),
 * PR_SET_DUMPABLE 0 and MADV_DONTDUMP on all domain memory.  What the
 * filter covers stays mpkit's: memory mpkit gives back afterwards is
 * reserved again (PROT_NONE), not unmapped, and reused.  Flags add:
 */
#define MPK_LOCK_ERRNO       0x01u /* a denied call fails with EPERM (default: the process is killed) */
#define MPK_LOCK_SEAL        0x02u /* mseal() the mpk_alloc() memory of keyed domains (Linux 6.10+; else the filter alone) */
#define MPK_LOCK_PROC_MEM    0x04u /* Landlock: /proc/PID/mem and task/TID/mem cannot be opened (the caller and threads it starts later) */
#define MPK_LOCK_NO_OPEN     0x08u /* open(), openat(), openat2(), creat() denied from now on (every thread) */
#define MPK_LOCK_SCAN        0x10u /* scan executable mappings for WRPKRU/XRSTOR outside mpkit: report each, refuse (EPERM) if one is a gadget (not ROP-only) */
#define MPK_LOCK_SCAN_REPORT 0x20u /* the same scan, reported on stderr, without refusing */
#define MPK_LOCK_FREEZE_KEYS 0x40u /* pkey_alloc/pkey_free denied to mpkit too: no key is taken or given back any more */

/*
 * Apply the lockdown.  x86-64 Linux only.  Also denies perf_event_open,
 * new actions for SIGILL/SIGTRAP/SIGBUS/SIGFPE/SIGSEGV (install handlers
 * before), changes to mpkit's gate code, and gives SIGTRAP its default
 * action.  Returns 0, or -1 with errno and nothing applied: EINVAL (unknown
 * flags), EALREADY (done already), EBUSY (an io_uring instance, a
 * tracer, or executable memory a write could still change: rwx, a memfd,
 * READ_IMPLIES_EXEC...; see mpk_lockdown(3)), EPERM (MPK_LOCK_SCAN found a
 * gadget), ENOTSUP (seccomp, or Landlock for MPK_LOCK_PROC_MEM, missing),
 * E2BIG (too many domain or executable ranges for the filter), EAGAIN (a thread runs under a seccomp filter of its own,
 * which the filter cannot join), ENOMEM.  The filter needs no_new_privs,
 * which nothing can clear: it is set only once every check passed, but a
 * refusal the kernel alone can make (a thread under filters other than the
 * caller's but no more of them, ENOMEM for the filters' total length)
 * leaves it set.
 */
int mpk_lockdown(unsigned flags) MPK__NOTHROW MPK__NODISCARD;

/* The flags of the lockdown in force, or -1 if there is none. */
int mpk_lockdown_flags(void) MPK__NOTHROW;

/*
 * pthread_create(), but the new thread starts with every domain closed,
 * whatever scope its creator is in (a plain pthread_create() inside
 * MPK_WITH hands the scope's rights to the new thread, on hw for good).
 * Returns 0, or -1 with errno: EINVAL (thread or fn NULL), ENOMEM, or
 * pthread_create()'s error (EAGAIN, EPERM...); nothing started then.
 */
int mpk_thread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
	MPK__NOTHROW MPK__NODISCARD MPK__NONNULL(1) MPK__NONNULL(3);

#ifdef __cplusplus
}
#endif
#endif /* MPKIT_H */
