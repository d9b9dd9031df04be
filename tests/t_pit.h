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
 * docs/threat-model.md.
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

static const char *const pit_names[] = {
	"?", "LEAKED", "BLOCKED (EPERM)", "BLOCKED (EFAULT)", "BLOCKED (EACCES)",
	"BLOCKED (killed, SIGSYS)", "BLOCKED (SIGSEGV)", "n/a (SIGILL: no PKU)",
	"BLOCKED (WRPKRU check: exit 134)", "REFUSED (lockdown fails)",
	"kept (no effect)", "n/a", "allowed", "BLOCKED (no dump: dd, dumpable 0)",
	"WRITTEN (overwritten)", "BLOCKED (killed, SIGTRAP)", "ERROR",
};

#define PIT_SECRET "TOPSECRET-key-0123456789abcdef"
static mpk_domain *pit_dom;
static unsigned char *pit_secret; /* a page of pit_dom, closed */

/* The bytes at p are the secret. */
static inline bool pit_is_secret(const void *p)
{
	return !memcmp(p, PIT_SECRET, sizeof(PIT_SECRET));
}

/* The outcome of a system call that was to copy the secret into buf. */
static inline int pit_copy_outcome(long rc, int err, const void *buf)
{
	if (rc >= 0)
		return pit_is_secret(buf) ? O_LEAKED : O_KEPT;
	return err == EPERM ? O_EPERM : err == EFAULT || err == EIO ? O_EFAULT
	     : err == EACCES ? O_EACCES : err == ENOSYS ? O_NA : O_ERROR;
}

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
};

/* SIGSEGV back to its default, so that a fault ends the process by
 * SIGSEGV, also under a sanitizer that handles it itself (raw call: no
 * interceptor). */
static inline void pit_default_segv(void)
{
	struct { void *handler; unsigned long flags; void *restorer; unsigned long mask; } dfl = { 0 };
	syscall(SYS_rt_sigaction, SIGSEGV, &dfl, NULL, 8);
}

static int pit_child(const struct pit *p, bool locked)
{
	pit_dom = mpk_domain_create("pit-secret", MPK_RW, 0);
	if (!pit_dom)
		return O_ERROR;
	pit_secret = mpk_alloc(pit_dom, 4096);
	if (!pit_secret)
		return O_ERROR;
	memcpy(pit_secret, PIT_SECRET, sizeof(PIT_SECRET));
	if (mpk_set(pit_dom, MPK_NONE))
		return O_ERROR;
	pit_default_segv(); /* a fault must end the child by SIGSEGV */
	if (p->setup)
		p->setup();
	if (locked && mpk_lockdown(p->lock_flags))
		return errno == EPERM || errno == EBUSY ? O_REFUSED : O_ERROR;
	fflush(NULL);
	return p->attempt();
}

static int pit_run_one(const struct pit *p, bool locked)
{
	int status;

	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(pit_child(p, locked));
	REQUIRE(waitpid(pid, &status, 0) == pid);
	if (WIFSIGNALED(status))
		switch (WTERMSIG(status)) {
		case SIGSYS: return O_KILLED;
		case SIGSEGV: return O_FAULT;
		case SIGILL: return O_SIGILL;
		case SIGTRAP: return O_TRAPPED;
		default: return O_ERROR;
		}
	int c = WEXITSTATUS(status);
	if (c == 134)
		return O_CHECK;
	return c >= O_LEAKED && c <= O_ERROR ? c : O_ERROR;
}

/* len bytes of code on a page of their own, executable (before lockdown):
 * a program that carries this code.  NULL on failure. */
static inline void *pit_plant(const void *code, size_t len)
{
	unsigned char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	memcpy(p, code, len);
	if (mprotect(p, 4096, PROT_READ | PROT_EXEC)) {
		munmap(p, 4096);
		return NULL;
	}
	return p;
}

/* The address of one of mpkit's checked WRPKRU sites (pkru.h). */
extern const int32_t __start_mpk_wrpkru_sites[] __attribute__((visibility("hidden")));
extern const int32_t __stop_mpk_wrpkru_sites[] __attribute__((visibility("hidden")));
static inline uintptr_t pit_mpkit_site(int i)
{
	const int32_t *e = __start_mpk_wrpkru_sites + i;
	return e < __stop_mpk_wrpkru_sites ? (uintptr_t)e + (intptr_t)*e : 0;
}

/* End a process that has locked down: LeakSanitizer's check at exit
 * stops the threads with ptrace(), which the filter denies, so leave
 * without atexit handlers. */
static inline void t_exit_locked(void)
{
	int rc = t_done();
	fflush(NULL);
	_exit(rc);
}

static inline int pit_main(const struct pit *p)
{
	struct utsname u;
	int b = t_backend() == MPK_BACKEND_HW ? 0 : 1;
	const char *why = p->absent ? p->absent() : NULL;

	if (why || (why = t_lockdown_absent(p->lock_flags)))
		t_skip(why);
	if (uname(&u))
		strcpy(u.release, "?");
	int before = pit_run_one(p, false), after = pit_run_one(p, true);
	printf("pit: %-26s | %-4s | %-22s | before: %-26s | after: %s%s%s\n", p->name,
	       b ? "soft" : "hw", u.release, pit_names[before], pit_names[after],
	       p->note ? " -- " : "", p->note ? p->note : "");
	if (!(p->before[b] & B(before)))
		t_fail("%s before lockdown: %s, not the documented outcome", p->name, pit_names[before]);
	if (!(p->after[b] & B(after)))
		t_fail("%s after lockdown: %s, not the documented outcome", p->name, pit_names[after]);
	return t_done();
}

#endif
