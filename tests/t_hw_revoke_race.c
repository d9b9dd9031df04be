/*
 * hw: a revoke reaches a thread even when it lands in the middle of that
 * thread's own rights change.  Thread T holds RW to domain d (key k) and
 * keeps changing its rights to another domain; main destroys d, which
 * revokes k in every thread by signalling it.  A tracer (the parent, with
 * ptrace) holds that signal back, single-steps T to the WRPKRU of its
 * mpk_set() - after it has read PKRU, before it writes the value computed
 * from it - and delivers the signal exactly there.  Then main creates d2,
 * which gets key k again: T must have no rights to it.  Without a
 * restartable read-modify-write, T would write back k's old RW bits.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/user.h>

#include "t_ptrace.h"

static mpk_domain *d, *other, *d2;
static unsigned char *p2;
static int go_check; /* atomic */
static int to_parent[2], from_parent[2];

static void *thread_t(void *arg)
{
	(void)arg;
	pid_t tid = (pid_t)syscall(SYS_gettid);
	REQUIRE(mpk_set(d, MPK_RW) == 0);
	REQUIRE(write(to_parent[1], &tid, sizeof(tid)) == (ssize_t)sizeof(tid));
	/* No system calls from here on: only rights changes. */
	while (!__atomic_load_n(&go_check, __ATOMIC_SEQ_CST)) {
		CHECK(mpk_set(other, MPK_RW) == 0);
		CHECK(mpk_set(other, MPK_NONE) == 0);
	}
	CHECK_NO_STALE_RIGHTS(d2, p2);
	return NULL;
}

/* The child: T, and main destroying d when the tracer is ready. */
static int child(void)
{
	pthread_t t;
	char c;

	REQUIRE(other = mpk_domain_create("race-other", MPK_NONE, 0));
	REQUIRE(d = mpk_domain_create("race", MPK_NONE, 0));
	int k = mpk_domain_key(d);
	REQUIRE(pthread_create(&t, NULL, thread_t, NULL) == 0);
	REQUIRE(read(from_parent[0], &c, 1) == 1); /* T is traced */
	REQUIRE(mpk_domain_destroy(d) == 0);
	REQUIRE(d2 = mpk_domain_create("race-new", MPK_NONE, 0));
	REQUIRE(p2 = mpk_alloc(d2, 4096));
	if (mpk_domain_key(d2) != k) {
		printf("skip: the new domain got key %d, not %d\n", mpk_domain_key(d2), k);
		exit(T_SKIP);
	}
	__atomic_store_n(&go_check, 1, __ATOMIC_SEQ_CST);
	REQUIRE(pthread_join(t, NULL) == 0);
	return t_done();
}

static int is_wrpkru(unsigned long rip)
{
	const unsigned char *ip = (const unsigned char *)rip; /* same image */
	return ip[0] == 0x0f && ip[1] == 0x01 && ip[2] == 0xef;
}

int main(void)
{
	int st;
	pid_t tid;

	t_need_hw();
	REQUIRE(pipe(to_parent) == 0 && pipe(from_parent) == 0);
	pid_t pid = t_fork_seize(child, to_parent[0], &tid);
	REQUIRE(write(from_parent[1], "g", 1) == 1);

	/* The first signal T gets is the revoke. */
	int sig = 0;
	while (!sig) {
		REQUIRE(waitpid(tid, &st, __WALL) == tid);
		REQUIRE(WIFSTOPPED(st));
		if (st >> 16) /* an event stop, not a signal */
			REQUIRE(ptrace(PTRACE_CONT, tid, 0, 0) == 0);
		else
			sig = WSTOPSIG(st);
	}
	CHECK(sig >= SIGRTMIN && sig <= SIGRTMAX);

	/* Hold it back; step T to a WRPKRU that is about to run. */
	struct user_regs_struct regs;
	int steps = 0, at_wrpkru = 0;
	REQUIRE(ptrace(PTRACE_SINGLESTEP, tid, 0, 0) == 0);
	while (steps++ < 100000) {
		REQUIRE(waitpid(tid, &st, __WALL) == tid);
		REQUIRE(WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP);
		REQUIRE(ptrace(PTRACE_GETREGS, tid, 0, &regs) == 0);
		if (is_wrpkru(regs.rip) && regs.rcx == 0 && regs.rdx == 0) {
			at_wrpkru = 1;
			break;
		}
		REQUIRE(ptrace(PTRACE_SINGLESTEP, tid, 0, 0) == 0);
	}
	CHECK(at_wrpkru);
	/* Deliver the revoke there and let T go. */
	REQUIRE(ptrace(PTRACE_DETACH, tid, 0, (void *)(intptr_t)sig) == 0);

	REQUIRE(waitpid(pid, &st, 0) == pid);
	if (WIFEXITED(st) && WEXITSTATUS(st) == T_SKIP)
		return T_SKIP;
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		t_fail("the child failed (status 0x%x)", st);
	return t_done();
}
