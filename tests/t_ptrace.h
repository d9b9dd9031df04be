/* SPDX-License-Identifier: MIT */
/* The revoke tests watch one thread of a child from outside, with ptrace:
 * what signals reach it, and when. */
#ifndef MPK_TEST_PTRACE_H
#define MPK_TEST_PTRACE_H

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <sys/ptrace.h>

#include "t.h"

/*
 * Fork a child that runs child() and writes the tid of the thread to watch
 * to the pipe read by rd; seize that thread.  Skips the test (killing the
 * child) where ptrace is not permitted.  Returns the child's pid, the
 * thread's in *tid.
 */
static inline pid_t t_fork_seize(int (*child)(void), int rd, pid_t *tid)
{
	int st;

	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		exit(child());
	REQUIRE(read(rd, tid, sizeof(*tid)) == (ssize_t)sizeof(*tid));
	if (ptrace(PTRACE_SEIZE, *tid, 0, 0)) {
		char why[128];
		snprintf(why, sizeof(why), "cannot ptrace the thread: %s", strerror(errno));
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		t_skip(why);
	}
	return pid;
}

/* The domain d2 that got a revoked key: this thread holds no rights to it,
 * and a read of p2 from a child forked here faults. */
#define CHECK_NO_STALE_RIGHTS(d2, p2)                                            \
	do {                                                                     \
		if (mpk_get(d2) != MPK_NONE)                                     \
			t_fail("this thread holds rights %d to the new domain on " \
			       "the revoked key %d", mpk_get(d2), mpk_domain_key(d2)); \
		CHECK_FAULT(t_read_in_child(p2), d2, p2);                        \
	} while (0)

/* Whether tid has a signal pending for itself (a revoke is thread-directed). */
static inline int t_has_pending(pid_t pid, pid_t tid)
{
	char path[64], line[128];
	unsigned long long mask = 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "SigPnd:", 7))
			mask = strtoull(line + 7, NULL, 16);
	fclose(f);
	return mask != 0;
}

/*
 * A revoke that arrives while a thread is being handed a SIGSEGV: in a
 * child, thread T holds RW to domain d (key k) and, once traced, makes an
 * access that faults (fault(), which also checks what follows it; setup()
 * installed the handler first).  The tracer (the parent) holds T's SIGSEGV
 * until main's destroy of d has signalled T too, then lets both go: the
 * kernel sets up the SIGSEGV frame and delivers the revoke on top of it,
 * before the handler's first instruction (unless the handler blocks it).
 * Then main creates d2, which gets key k again: once its handler has
 * returned, T must hold no rights to it.
 */
static struct {
	void (*fault)(void);
	mpk_domain *d, *d2;
	unsigned char *p2;
	int go_check; /* atomic */
	int to_parent[2], from_parent[2], to_main[2];
} t_rof;

static inline void *t_rof_thread(void *arg)
{
	char c;
	(void)arg;
	pid_t tid = (pid_t)syscall(SYS_gettid);
	REQUIRE(mpk_set(t_rof.d, MPK_RW) == 0);
	REQUIRE(write(t_rof.to_parent[1], &tid, sizeof(tid)) == (ssize_t)sizeof(tid));
	REQUIRE(read(t_rof.from_parent[0], &c, 1) == 1); /* traced now */
	t_rof.fault();
	while (!__atomic_load_n(&t_rof.go_check, __ATOMIC_SEQ_CST))
		sched_yield();
	CHECK_NO_STALE_RIGHTS(t_rof.d2, t_rof.p2);
	return NULL;
}

static void (*t_rof_setup)(void);

static inline int t_rof_child(void)
{
	pthread_t t;
	char c;

	t_rof_setup();
	REQUIRE(t_rof.d = mpk_domain_create("rof-d", MPK_NONE, 0));
	int k = mpk_domain_key(t_rof.d);
	REQUIRE(pthread_create(&t, NULL, t_rof_thread, NULL) == 0);
	REQUIRE(read(t_rof.to_main[0], &c, 1) == 1); /* T's SIGSEGV is held */
	REQUIRE(mpk_domain_destroy(t_rof.d) == 0);
	REQUIRE(t_rof.d2 = mpk_domain_create("rof-new", MPK_NONE, 0));
	REQUIRE(t_rof.p2 = mpk_alloc(t_rof.d2, 4096));
	if (mpk_domain_key(t_rof.d2) != k)
		printf("note: the new domain got key %d, not %d\n", mpk_domain_key(t_rof.d2), k);
	__atomic_store_n(&t_rof.go_check, 1, __ATOMIC_SEQ_CST);
	REQUIRE(pthread_join(t, NULL) == 0);
	return t_done();
}

/* The scenario above, from the parent: the test's main. */
static inline int t_revoke_on_fault_entry(void (*setup)(void), void (*fault)(void))
{
	int st;
	pid_t tid;

	t_need_hw();
	t_rof_setup = setup;
	t_rof.fault = fault;
	REQUIRE(pipe(t_rof.to_parent) == 0 && pipe(t_rof.from_parent) == 0 &&
		pipe(t_rof.to_main) == 0);
	pid_t pid = t_fork_seize(t_rof_child, t_rof.to_parent[0], &tid);
	REQUIRE(write(t_rof.from_parent[1], "g", 1) == 1);

	/* T's fault: hold it. */
	REQUIRE(waitpid(tid, &st, __WALL) == tid);
	REQUIRE(WIFSTOPPED(st) && !(st >> 16) && WSTOPSIG(st) == SIGSEGV);
	/* Main destroys d; wait until its revoke is pending in T. */
	REQUIRE(write(t_rof.to_main[1], "d", 1) == 1);
	while (!t_has_pending(pid, tid))
		sched_yield();
	/* Both go now; pass on every signal until T is done. */
	int sig = SIGSEGV, revoke_seen = 0;
	for (;;) {
		REQUIRE(ptrace(PTRACE_CONT, tid, 0, (void *)(intptr_t)sig) == 0);
		REQUIRE(waitpid(tid, &st, __WALL) == tid);
		if (!WIFSTOPPED(st))
			break; /* T exited */
		sig = (st >> 16) ? 0 : WSTOPSIG(st);
		if (sig >= SIGRTMIN && sig <= SIGRTMAX)
			revoke_seen = 1;
	}
	CHECK(revoke_seen);
	REQUIRE(waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		t_fail("the child failed (status 0x%x)", st);
	return t_done();
}

#endif
