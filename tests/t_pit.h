/* SPDX-License-Identifier: MIT */
/*
 * The pitfalls suite: one test per bypass class of a closed domain.  Each
 * test runs its attempt twice, each time in a fresh child holding a secret
 * in a closed domain: once as the process is (before lockdown), once after
 * mpk_lockdown(flags).  The outcome of each run (the secret came out, the
 * call failed with EPERM, the process was killed by the filter, a fault,
 * ...) must be one the test expects for this backend, and is printed as a
 * row ("pit: ..."), which run-tests.sh shows for passing tests too: the
 * rows of the native and both VM runs make the table in
 * docs/threat-model.md.  A test that gives kexcl runs both again with the
 * secret in memfd_secret memory: rows named "... [secretmem]".
 */
#ifndef MPK_TEST_PIT_H
#define MPK_TEST_PIT_H

#include "t.h"
#include "t_kernel.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/utsname.h>

enum pit_outcome {
	O_LEAKED = 1,   /* the secret's bytes came out */
	O_EPERM,        /* the call failed with EPERM (the filter) */
	O_EFAULT,       /* the kernel refused the copy (EFAULT/EIO) */
	O_EACCES,       /* open() refused (Landlock, or DAC after dumpable 0) */
	O_KILLED,       /* SIGSYS: killed by the filter */
	O_FAULT,        /* SIGSEGV: the domain's protection held */
	O_SIGILL,       /* the instruction does not exist here (no PKU) */
	O_CHECK,        /* exit 134: mpkit's checked WRPKRU site refused */
	O_REFUSED,      /* mpk_lockdown() refused to lock (gadgets, a live io_uring) */
	O_KEPT,         /* the attempt did nothing to the secret, no error */
	O_NA,           /* the mechanism does not exist here (ENOSYS, no keys) */
	O_ALLOWED,      /* the call ran (no secret involved: an entry path) */
	O_NODUMP,       /* not dumpable, and the memory is marked dd (no core) */
	O_WRITTEN,      /* the secret was overwritten (integrity lost) */
	O_TRAPPED,      /* SIGTRAP: a trap ended the process (no handler allowed) */
	O_ERROR,        /* the setup failed: the test fails */
};
#define B(o) (1u << (o))

#define PIT_SECRET "TOPSECRET-key-0123456789abcdef"
extern mpk_domain *pit_dom;
extern unsigned char *pit_secret; /* a page of pit_dom, closed */

/* The bytes at p are the secret. */
bool pit_is_secret(const void *p);

/* The outcome of a system call that was to copy the secret into buf. */
int pit_copy_outcome(long rc, int err, const void *buf);
/* O_ERROR, after a line on stderr naming what failed and err (0: none;
 * ETIMEDOUT: no completion in time), so that a report of ERROR says
 * which step could not be made. */
int pit_error(const char *what, int err);

struct pit {
	const char *name;
	int (*attempt)(void);   /* in the child; returns an outcome */
	void (*setup)(void);    /* optional, in the child before lockdown */
	unsigned lock_flags;    /* for the run after lockdown */
	unsigned before[2];     /* acceptable outcomes: [0] hw, [1] soft */
	unsigned after[2];
	const char *note;       /* printed with the row */
	/* optional: why the mechanism attempted does not exist on this
	 * kernel (the test skips), or NULL */
	const char *(*absent)(void);
	/* optional: the outcomes before lockdown ([0] hw, [1] soft) with the
	 * secret in memfd_secret memory (MPK_DOMAIN_SECRETMEM, as vaults
	 * are): a second row, where the kernel has it; after lockdown the
	 * outcomes above hold. */
	unsigned kexcl[2];
};

/* SIGSEGV back to its default, so that a fault ends the process by
 * SIGSEGV, also under a sanitizer that handles it itself (raw call: no
 * interceptor). */
void pit_default_segv(void);

/* len bytes of code on a page of their own, executable (before lockdown):
 * a program that carries this code.  NULL on failure. */
void *pit_plant(const void *code, size_t len);

/* The address of one of mpkit's checked WRPKRU sites (pkru.h). */
extern const int32_t __start_mpk_wrpkru_sites[] __attribute__((visibility("hidden")));
extern const int32_t __stop_mpk_wrpkru_sites[] __attribute__((visibility("hidden")));
uintptr_t pit_mpkit_site(int i);

/* End a process that has locked down: LeakSanitizer's check at exit
 * stops the threads with ptrace(), which the filter denies, so leave
 * without atexit handlers. */
void t_exit_locked(void);

int pit_main(const struct pit *p);

#endif
