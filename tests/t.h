/* SPDX-License-Identifier: MIT */
/*
 * The test kit: every test is one program, one behaviour, exit 0 pass,
 * 1 fail, 77 skip.  The same binary runs natively (soft backend here) and in
 * the PKU virtual machine (hw backend).
 */
#ifndef MPK_TEST_H
#define MPK_TEST_H

#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Tests misuse the API on purpose (NULL, freed and foreign pointers,
 * sizes no memory holds), which the header's attributes flag:
 * tests/check-header.sh proves they do. */
#define MPK_NO_NONNULL
#include "mpkit.h"
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Walloc-size-larger-than="
#pragma GCC diagnostic ignored "-Wfree-nonheap-object"
#pragma GCC diagnostic ignored "-Warray-bounds"
#if __GNUC__ >= 11
#pragma GCC diagnostic ignored "-Wmismatched-dealloc"
#endif
#if __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif
#endif
/* glibc's pkey wrappers (2.27), which musl lacks: the same for the tests
 * that call them, on the raw system calls and PKRU. */
#if !defined(__GLIBC__) && defined(__x86_64__)
#define PKEY_DISABLE_ACCESS 0x1
#define PKEY_DISABLE_WRITE 0x2
static inline int pkey_alloc(unsigned int flags, unsigned int rights)
{
	return (int)syscall(SYS_pkey_alloc, flags, rights);
}
static inline int pkey_free(int key)
{
	return (int)syscall(SYS_pkey_free, key);
}
static inline int pkey_mprotect(void *addr, size_t len, int prot, int key)
{
	return (int)syscall(SYS_pkey_mprotect, addr, len, prot, key);
}
static inline int pkey_get(int key)
{
	unsigned int pkru;
	if (key < 0 || key > 15)
		return errno = EINVAL, -1;
	__asm__ volatile("rdpkru" : "=a"(pkru) : "c"(0) : "rdx");
	return (int)(pkru >> (2 * key)) & 3;
}
static inline int pkey_set(int key, unsigned int rights)
{
	unsigned int pkru;
	if (key < 0 || key > 15 || rights > 3)
		return errno = EINVAL, -1;
	__asm__ volatile("rdpkru" : "=a"(pkru) : "c"(0) : "rdx");
	pkru = (pkru & ~(3u << (2 * key))) | rights << (2 * key);
	__asm__ volatile("wrpkru" ::"a"(pkru), "c"(0), "d"(0) : "memory");
	return 0;
}
#endif
/* mmap() with the kernel's errno: musl's wrapper reports EPERM for an
 * anonymous mapping as ENOMEM, so a lockdown filter's refusal of
 * PROT_EXEC reaches a musl program as ENOMEM. */
static inline void *t_mmap_sys(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}
#ifdef __clang__
#pragma clang diagnostic ignored "-Wnon-power-of-two-alignment"
#endif

#ifndef SEGV_PKUERR
#define SEGV_PKUERR 4
#endif

#define T_SKIP 77

extern int t_failures;

#define t_fail(...)                                                         \
	do {                                                                \
		fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);             \
		fprintf(stderr, __VA_ARGS__);                               \
		fputc('\n', stderr);                                        \
		t_failures++;                                               \
	} while (0)

/* CHECK(cond): record a failure and go on. */
#define CHECK(cond)                                                         \
	do {                                                                \
		if (!(cond))                                                \
			t_fail("CHECK failed: %s", #cond);                  \
	} while (0)

/* REQUIRE(cond): fail and stop now. */
#define REQUIRE(cond)                                                       \
	do {                                                                \
		if (!(cond)) {                                              \
			t_fail("REQUIRE failed: %s (errno %d: %s)", #cond,  \
			       errno, strerror(errno));                     \
			exit(1);                                            \
		}                                                           \
	} while (0)

/* CHECK_ERR(expr, E): expr is -1 (or NULL) and errno is E. */
#define CHECK_ERR(expr, E)                                                  \
	do {                                                                \
		errno = 0;                                                  \
		long long t_rv_ = (long long)(intptr_t)(expr);              \
		int t_e_ = errno;                                           \
		if ((t_rv_ != -1 && t_rv_ != 0) || t_e_ != (E))             \
			t_fail("%s: want error %s, got rv %lld errno %d (%s)", \
			       #expr, #E, t_rv_, t_e_, strerror(t_e_));     \
	} while (0)

/* CHECK_HAS(text, what): the string what occurs in text. */
#define CHECK_HAS(text, what)                                                  \
	do {                                                                   \
		if (!strstr((text), (what)))                                   \
			t_fail("want \"%s\" in:\n%s", (what), (text));         \
	} while (0)

/* Print "skip: why" and end the test with T_SKIP. */
__attribute__((noreturn)) void t_skip(const char *why);

/* This test's exit status: 1 (saying how many checks failed) or 0. */
int t_done(void);

/* The backend mpkit chose; the test fails if it could not initialise. */
int t_backend(void);

/* Run this test on hw only (skip elsewhere). */
void t_need_hw(void);
/* On hw: a new RW domain name, which must hold a hardware key (1..15): *key. */
mpk_domain *t_hw_domain(const char *name, int *key);

/* Force the soft backend (call before any other mpkit call). */
void t_force_soft(void);

/* Whether the drop-in allocator (libmpkit-malloc.so) is in this process
 * (`make check-malloc` runs the suite under it): it brings a second mpkit,
 * libmpkit.so, with a domain "malloc" and a registry of its own. */
bool t_dropin_loaded(void);

/*
 * Virtual domains: with no key left (budget or kernel), a create still
 * succeeds but the domain has no key (soft protection) when it does not
 * take rights; CHECK that, that no key was taken, then destroy it.
 */
#define CHECK_KEYLESS_CREATE(name)                                           \
	do {                                                                 \
		struct mpk_info t_i0_, t_i1_;                                \
		REQUIRE(mpk_info(&t_i0_) == 0);                              \
		mpk_domain *t_d_ = mpk_domain_create((name), MPK_NONE, 0);  \
		CHECK(t_d_ != NULL);                                         \
		if (!t_d_)                                                   \
			break;                                               \
		CHECK_ERR(mpk_domain_key(t_d_), ENOENT);                     \
		REQUIRE(mpk_info(&t_i1_) == 0);                              \
		CHECK(t_i1_.keys_in_use == t_i0_.keys_in_use);               \
		CHECK(t_i1_.domains == t_i0_.domains + 1);                   \
		CHECK(mpk_domain_destroy(t_d_) == 0);                        \
	} while (0)

/* ---- running a child: the one runner ---- */

/* What a child saw when it touched memory it should not have. */
struct t_fault {
	int faulted;   /* 1: SIGSEGV caught */
	int code;      /* si_code */
	int pkey;      /* si_pkey */
	void *where;   /* si_addr */
	int exit_code; /* the child's exit code, or -signal */
};

/* What t_child() does besides running fn (flags, or-ed). */
enum {
	T_CHILD_FAULT = 1 << 0,  /* record a SIGSEGV's siginfo in .fault; the
				    recorder then ends the child (exit 42) */
	T_CHILD_STDOUT = 1 << 1, /* capture its stdout into .out */
	T_CHILD_STDERR = 1 << 2, /* capture its stderr into .err */
	T_CHILD_MERGED = 1 << 3, /* with T_CHILD_STDOUT: its stderr into .out too */
	T_CHILD_CHECKS = 1 << 4, /* fn's CHECKs count: the child starts with
				    none failed and exits with t_done() */
	T_CHILD_EXIT = 1 << 5,   /* end it by exit() (atexit handlers run, the
				    leak checker too), not _exit() */
};

/* What became of a child. */
struct t_child {
	pid_t pid;            /* the child's process id */
	int status;           /* the wait status */
	int exit_code;        /* its exit code, or -signal */
	int signal;           /* the signal that ended it, or 0 */
	struct t_fault fault; /* T_CHILD_FAULT: faulted=1 and the siginfo */
	char *out, *err;      /* captured (malloc()ed, NUL-terminated) or NULL */
};

/*
 * Run fn(arg) in a forked child (fn returning: exit 0, or t_done() with
 * T_CHILD_CHECKS) and wait for it.  t_child_free() frees the captures.
 */
struct t_child t_child(void (*fn)(void *), void *arg, unsigned flags);
void t_child_free(struct t_child *c);

/* The child's part of an exec: set env's "NAME=VALUE" entries ("NAME"
 * alone: unset; env may be NULL), then execv(path, argv) (path: argv[0]
 * if NULL; execvp if it has no '/'); exit 127 if it cannot (126 if
 * out_path cannot be opened).  As t_child()'s fn, to run a program. */
struct t_exec {
	char *const *argv;
	char *const *env;
	const char *out_path; /* if not NULL: stdout to this file */
	const char *path;     /* the program, if not argv[0] */
};
void t_exec_main(void *exec);

/* The status as a shell gives it: the exit code, or 128 + signal. */
int t_child_shell_status(const struct t_child *c);

/* t_child() for a fn whose return value (0..255) is the child's exit
 * code (flags: the captures and T_CHILD_FAULT; fn's CHECKs do not count). */
struct t_child t_child_ret(int (*fn)(void *), void *arg, unsigned flags);

/* Run fn(arg) in a child exiting with fn's return value: its status as a
 * shell gives it (a test's verdict on what the child could do). */
int t_child_status(int (*fn)(void *), void *arg);

/* Run fn in a forked child whose checks count as this test's: for limits
 * (rlimits, capabilities) or a backend choice that must not last. */
void t_in_child(void (*fn)(void), const char *what);

/* The soft variant of t_both_backends(): forces soft, runs t_soft_scenario. */
extern void (*t_soft_scenario)(void);
void t_soft_variant(void);

/*
 * Run scenario on the soft backend (in a child, before this process picks
 * a backend) and then, where the machine has keys, on hw here: one program
 * proves a behaviour that both backends must have.
 */
int t_both_backends(void (*scenario)(void));

/* ---- provoking faults ---- */

void t_touch_read(void *p);
void t_touch_write(void *p);

/* The program's own SIGSEGV handler, as a program installs it (SA_SIGINFO). */
void t_segv_handler_install(void (*fn)(int, siginfo_t *, void *));

/* The SIGSEGV recorder as this process's handler (children inherit it).
 * After mpk_lockdown() no new SIGSEGV handler can be installed: a test
 * that runs t_run_child() after its lockdown calls this before. */
void t_segv_recorder_install(void);

/*
 * Run fn(arg) in a forked child with a SIGSEGV recorder installed.  Returns
 * what happened: faulted=1 with the siginfo fields if fn faulted, else
 * faulted=0 and the child's exit code (fn returning means exit 0).
 */
struct t_fault t_run_child(void (*fn)(void *), void *arg);

/* In a T_CHILD_FAULT child, from a fault handler of its own: hand f to
 * the runner as the recorder would (then the handler ends the child). */
void t_fault_record(const struct t_fault *f);

struct t_fault t_read_in_child(void *p);
struct t_fault t_write_in_child(void *p);

/*
 * Run fn(arg) in a child with stderr captured into buf (NUL-terminated).
 * Returns the child's wait status.
 */
int t_child_stderr(void (*fn)(void *), void *arg, char *buf, size_t size);

/*
 * Check a fault the way the backend raises it: SEGV_PKUERR with the
 * domain's key on hw, SEGV_ACCERR on soft; at the address touched.
 */
#define CHECK_FAULT(f, d, p)                                                 \
	do {                                                                 \
		struct t_fault t_f_ = (f);                                   \
		if (!t_f_.faulted) {                                         \
			t_fail("expected a fault at %p, child exit %d",      \
			       (void *)(p), t_f_.exit_code);                 \
			break;                                               \
		}                                                            \
		CHECK(t_f_.where == (void *)(p));                             \
		if (mpk_domain_key(d) >= 0) {                                \
			CHECK(t_f_.code == SEGV_PKUERR);                  \
			CHECK(t_f_.pkey == mpk_domain_key(d));            \
		} else {                                                     \
			CHECK(t_f_.code == SEGV_ACCERR);                  \
		}                                                            \
	} while (0)

#define CHECK_NO_FAULT(f)                                                    \
	do {                                                                 \
		struct t_fault t_f_ = (f);                                   \
		if (t_f_.faulted || t_f_.exit_code != 0)                     \
			t_fail("expected no fault: faulted=%d si_code=%d "   \
			       "exit %d", t_f_.faulted, t_f_.code,        \
			       t_f_.exit_code);                              \
	} while (0)

/* ---- files and the environment ---- */

/* The start of a file as a string in buf; 0 if it cannot be read. */
int t_read_file(const char *path, char *buf, size_t size);

/* Whether thread tid is asleep (state S in /proc): blocked in a call. */
int t_thread_sleeping(pid_t tid);

/* setenv(name, value), or unsetenv(name) if value is NULL. */
void t_setenv(const char *name, const char *value);

/* v, or "(unset)" if NULL. */
const char *t_show(const char *v);

#endif
