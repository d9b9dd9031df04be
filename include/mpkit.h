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
 * state as it was.
 */
#ifndef MPKIT_H
#define MPKIT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MPK_VERSION_MAJOR 0
#define MPK_VERSION_MINOR 1
#define MPK_VERSION_PATCH 0
#define MPK_VERSION_STRING "0.1.0"

/* The version of the library actually loaded (may differ from the header). */
const char *mpk_version(void);

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
int mpk_init(void);

/* The backend in use (MPK_BACKEND_HW or _SOFT), or -1 with errno as mpk_init. */
int mpk_backend(void);

/* "hw" or "soft" for a backend value, NULL with EINVAL for anything else. */
const char *mpk_backend_name(int backend);

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
};

/* Fill *info.  Works on every machine and never changes any state; on a
 * bad MPKIT_BACKEND it still fills the hardware facts and returns -1/EINVAL. */
int mpk_info(struct mpk_info *info);

/* Counters for tests and tools; monotonic over the life of the process. */
struct mpk_stats {
	uint64_t mprotect_calls;  /* mprotect()/pkey_mprotect() made by mpkit */
	uint64_t broadcasts;      /* all-thread PKRU rewrites */
	uint64_t faults_reported; /* domain faults seen by the fault handler */
};
int mpk_stats_get(struct mpk_stats *stats);

/*
 * Most hardware keys mpkit takes (1..15).  Default 15, or MPKIT_KEYS from
 * the environment.  Lowering below the number of keys held fails with EBUSY.
 */
int mpk_set_key_budget(int keys);

/* ---- domains ----------------------------------------------------------- */

typedef struct mpk_domain mpk_domain;

/*
 * Create a domain.  name: 1..63 printable characters (it appears in fault
 * reports and in /proc/PID/maps as [anon:mpk:NAME] where the kernel allows).
 * rights: what the calling thread gets; every other thread gets MPK_NONE.
 * flags: must be 0.  Errors: EINVAL, ENOSPC (no hardware key left within the
 * budget), ENOMEM, ENOTSUP / EINVAL from mpk_init.
 */
mpk_domain *mpk_domain_create(const char *name, int rights, unsigned flags);

/*
 * Destroy a domain: unmap all its memory (allocated or adopted), revoke its
 * key in every thread, then release the key.  Destroying a domain twice is
 * detected (EINVAL) for a while, but like free() it is a bug.
 */
int mpk_domain_destroy(mpk_domain *d);

/* The domain's name, NULL/EINVAL for a bad domain. */
const char *mpk_domain_name(const mpk_domain *d);

/* The hardware key, or -1 with errno ENOENT on the soft backend. */
int mpk_domain_key(const mpk_domain *d);

/* The domain owning addr, or NULL with errno ENOENT. */
mpk_domain *mpk_domain_of(const void *addr);

/* ---- domain memory ----------------------------------------------------- */

/*
 * Map len bytes (rounded up to pages) of zeroed memory in domain d.  The
 * memory is readable/writable as far as the domain's rights allow.
 * Errors: EINVAL (bad domain, len 0 or absurd), ENOMEM.
 */
void *mpk_alloc(mpk_domain *d, size_t len);

/* Unmap memory from mpk_alloc() or mpk_adopt() of domain d.  addr must be
 * the start of that region.  EINVAL if it is not a region of d. */
int mpk_free(mpk_domain *d, void *addr);

/*
 * Put an existing private anonymous read/write mapping (page-aligned addr,
 * len a multiple of the page size, wholly mapped) into domain d.  Ownership
 * passes to the domain: mpk_free() or destroying the domain unmaps it.
 * Contents are kept.  Errors: EINVAL (unaligned, zero length, not private
 * anonymous read/write, overlaps memory of a domain), ENOMEM.
 */
int mpk_adopt(mpk_domain *d, void *addr, size_t len);

/* ---- rights of the calling thread ---------------------------------------
 *
 * On hw these touch the calling thread's PKRU only: no system call, no lock,
 * no allocation.  On soft they change the union of all threads' rights and
 * call mprotect() only when that union changes.
 */

/* Set the calling thread's rights to d.  Errors: EINVAL. */
int mpk_set(mpk_domain *d, int rights);

/* The calling thread's rights to d (MPK_NONE/READ/RW), or -1/EINVAL. */
int mpk_get(const mpk_domain *d);

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
mpk_scope mpk_enter(mpk_domain *d, int rights);
int mpk_leave(mpk_scope *scope);

/*
 * Block scope: rights to d inside the block, restored on every way out of it
 * but a goto or longjmp past its end ("break" leaves it, restoring rights).
 *
 *	MPK_WITH(keys, MPK_READ) {
 *		encrypt(blk, k);
 *	}
 */
#define MPK__CAT2(a, b) a##b
#define MPK__CAT(a, b) MPK__CAT2(a, b)
#define MPK_WITH(d, rights) MPK__WITH(d, rights, MPK__CAT(mpk__scope_, __LINE__))
#define MPK__WITH(d, rights, s)                                              \
	for (mpk_scope s __attribute__((cleanup(mpk__scope_cleanup))) =      \
		     mpk_enter((d), (rights));                                \
	     s.domain; mpk_leave(&s), s.domain = NULL)

/* Used by MPK_WITH's cleanup; also fine to call directly. */
void mpk__scope_cleanup(mpk_scope *scope);

/* ---- faults ------------------------------------------------------------ */

/* What the fault handler knows about a stray access to domain memory. */
struct mpk_fault {
	mpk_domain *domain;      /* the domain whose memory was touched */
	const char *domain_name;
	void *addr;              /* the faulting address */
	size_t offset;           /* from the start of the region */
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
 * mpk_get() are allowed and act on the interrupted thread's rights).
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
int mpk_fault_handler_install(mpk_fault_fn fn, void *arg);

/* Restore the previous SIGSEGV handler. EINVAL if none was installed. */
int mpk_fault_handler_remove(void);

/* Format the report for fault into buf (async-signal-safe); returns length. */
size_t mpk_fault_format(const struct mpk_fault *fault, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif /* MPKIT_H */
