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

#ifndef SEGV_PKUERR
#define SEGV_PKUERR 4
#endif

#define T_SKIP 77

static int t_failures;

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

static inline void t_skip(const char *why)
{
	printf("skip: %s\n", why);
	exit(T_SKIP);
}

static inline int t_done(void)
{
	if (t_failures) {
		fprintf(stderr, "%d check(s) failed\n", t_failures);
		return 1;
	}
	return 0;
}

/* The backend mpkit chose; the test fails if it could not initialise. */
static inline int t_backend(void)
{
	int b = mpk_backend();
	REQUIRE(b == MPK_BACKEND_HW || b == MPK_BACKEND_SOFT);
	return b;
}

/* Run this test on hw only (skip elsewhere). */
static inline void t_need_hw(void)
{
	if (t_backend() != MPK_BACKEND_HW)
		t_skip("needs hardware protection keys (runs in the VM suite)");
}

/* Force the soft backend (call before any other mpkit call). */
static inline void t_force_soft(void)
{
	setenv("MPKIT_BACKEND", "soft", 1);
	REQUIRE(mpk_backend() == MPK_BACKEND_SOFT);
}

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

/* Run fn in a forked child whose checks count as this test's: for limits
 * (rlimits, capabilities) or a backend choice that must not last. */
static inline void t_in_child(void (*fn)(void), const char *what)
{
	int status;

	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		fn();
		exit(t_done());
	}
	REQUIRE(waitpid(pid, &status, 0) == pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		t_fail("%s: status 0x%x", what, status);
}

static void (*t_soft_scenario)(void);

static inline void t_soft_variant(void)
{
	t_force_soft();
	t_soft_scenario();
}

/*
 * Run scenario on the soft backend (in a child, before this process picks
 * a backend) and then, where the machine has keys, on hw here: one program
 * proves a behaviour that both backends must have.
 */
static inline int t_both_backends(void (*scenario)(void))
{
	t_soft_scenario = scenario;
	t_in_child(t_soft_variant, "soft variant");
	if (t_backend() == MPK_BACKEND_HW)
		scenario();
	return t_done();
}

/* ---- provoking faults ---- */

/* What a child saw when it touched memory it should not have. */
struct t_fault {
	int faulted;   /* 1: SIGSEGV caught */
	int code;      /* si_code */
	int pkey;      /* si_pkey */
	void *where;   /* si_addr */
	int exit_code; /* the child's exit code, or -signal */
};

static volatile sig_atomic_t t_pipe_fd = -1;

static void t_segv_recorder(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	struct t_fault f = { 1, si->si_code, (int)si->si_pkey, si->si_addr, 0 };
	if (write(t_pipe_fd, &f, sizeof(f)) < 0)
		_exit(3);
	_exit(42);
}

static inline void t_touch_read(void *p)
{
	(void)*(volatile unsigned char *)p;
}

static inline void t_touch_write(void *p)
{
	*(volatile unsigned char *)p = 0x5a;
}

/* The SIGSEGV recorder as this process's handler (children inherit it).
 * After mpk_lockdown() no new SIGSEGV handler can be installed: a test
 * that runs t_run_child() after its lockdown calls this before. */
static inline void t_segv_recorder_install(void)
{
	struct sigaction sa, cur;
	if (!sigaction(SIGSEGV, NULL, &cur) && cur.sa_sigaction == t_segv_recorder)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = t_segv_recorder;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sa, NULL);
}

/*
 * Run fn(arg) in a forked child with a SIGSEGV recorder installed.  Returns
 * what happened: faulted=1 with the siginfo fields if fn faulted, else
 * faulted=0 and the child's exit code (fn returning means exit 0).
 */
static inline struct t_fault t_run_child(void (*fn)(void *), void *arg)
{
	struct t_fault f = { 0 };
	int fds[2], status;

	REQUIRE(pipe(fds) == 0);
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		t_pipe_fd = fds[1];
		t_segv_recorder_install();
		fn(arg);
		_exit(0);
	}
	close(fds[1]);
	ssize_t n = read(fds[0], &f, sizeof(f));
	close(fds[0]);
	REQUIRE(waitpid(pid, &status, 0) == pid);
	if (n != (ssize_t)sizeof(f))
		memset(&f, 0, sizeof(f));
	f.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
	return f;
}

static inline struct t_fault t_read_in_child(void *p)
{
	return t_run_child(t_touch_read, p);
}

static inline struct t_fault t_write_in_child(void *p)
{
	return t_run_child(t_touch_write, p);
}

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

/* The start of a file as a string in buf; 0 if it cannot be read. */
static inline int t_read_file(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = 0;
	return 1;
}

/* Whether thread tid is asleep (state S in /proc): blocked in a call. */
static inline int t_thread_sleeping(pid_t tid)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	if (!t_read_file(path, buf, sizeof(buf)))
		return 0;
	char *e = strrchr(buf, ')');
	return e && e[1] == ' ' && e[2] == 'S';
}

#endif
