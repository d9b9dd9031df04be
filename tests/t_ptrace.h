/* SPDX-License-Identifier: MIT */
/* The revoke tests watch one thread of a child from outside, with ptrace:
 * what signals reach it, and when. */
#ifndef MPK_TEST_PTRACE_H
#define MPK_TEST_PTRACE_H

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

#endif
