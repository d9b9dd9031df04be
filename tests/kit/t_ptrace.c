/* SPDX-License-Identifier: MIT */
#include <sys/user.h>

#include "t_ptrace.h"

struct t_rof_state t_rof;

pid_t t_fork_seize(int (*child)(void), int rd, pid_t *tid)
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

int t_has_pending(pid_t pid, pid_t tid)
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

int t_pass_signals(pid_t tid, int sig, uintptr_t *first_ip)
{
	struct user_regs_struct regs;
	int st, rt_seen = 0;

	for (bool first = true;; first = false) {
		REQUIRE(ptrace(PTRACE_CONT, tid, 0, (void *)(intptr_t)sig) == 0);
		REQUIRE(waitpid(tid, &st, __WALL) == tid);
		if (!WIFSTOPPED(st))
			return rt_seen; /* it exited */
		sig = (st >> 16) ? 0 : WSTOPSIG(st);
		bool rt = sig >= SIGRTMIN && sig <= SIGRTMAX;
		if (first && first_ip) {
			REQUIRE(ptrace(PTRACE_GETREGS, tid, 0, &regs) == 0);
			*first_ip = rt ? (uintptr_t)regs.rip : 0;
		}
		rt_seen |= rt;
	}
}

void *t_rof_thread(void *arg)
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

int t_rof_child(void)
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

int t_revoke_on_fault_entry(void (*setup)(void), void (*fault)(void))
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
	CHECK(t_pass_signals(tid, SIGSEGV, NULL));
	REQUIRE(waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		t_fail("the child failed (status 0x%x)", st);
	return t_done();
}
