/*
 * mpk_lockdown() refuses (EBUSY, nothing applied) while the process has a
 * tracer: the tracer sees each signal before the process does and sets
 * every register, PKRU included, and the filter cannot reach it.  Here the
 * parent traces a child that asked for it (PTRACE_TRACEME) before its
 * lockdown; a child without a tracer locks.
 */
#include <sys/ptrace.h>

#include "t_pit.h"

/* 0: EBUSY with nothing applied (traced) or locked (not traced). */
static int child(bool traced)
{
	if (traced && (ptrace(PTRACE_TRACEME, 0, NULL, NULL) || raise(SIGSTOP)))
		return 2;
	int rc = mpk_lockdown(MPK_LOCK_ERRNO);
	if (traced)
		return rc == -1 && errno == EBUSY && mpk_lockdown_flags() == -1 &&
		       prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1 ? 0 : 1;
	return rc == 0 && mpk_lockdown_flags() == MPK_LOCK_ERRNO ? 0 : 1;
}

static int run(bool traced)
{
	int st;

	fflush(NULL);
	/* Its own fork: the parent traces the child, answering each stop
	 * (t_child() only waits for the end). */
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(child(traced));
	/* As the tracer: let every stop go on, signals passed but SIGSTOP. */
	while (waitpid(pid, &st, 0) == pid && WIFSTOPPED(st)) {
		int sig = WSTOPSIG(st) == SIGSTOP ? 0 : WSTOPSIG(st);
		ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(void)
{
	int traced = run(true), free_ = run(false);
	if (traced == 2)
		t_skip("PTRACE_TRACEME is not allowed here");
	CHECK(traced == 0);
	CHECK(free_ == 0);
	return t_done();
}
