/*
 * hw: destroying a domain gives its key back even when a thread is slow to
 * answer the revocation.  Thread T holds RW to domain d; main destroys d,
 * which signals T.  A tracer (the parent, with ptrace) delivers that signal
 * and stops T on the first instruction of mpkit's handler - where T blocks
 * every signal, as handlers do - and keeps it there until main has polled
 * T at least once.  T is busy answering, not unable to: the destroy must
 * wait for it, release the key (keys_in_use drops to 0) and the next domain
 * gets the same key with T holding no rights to it.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <sched.h>

#include "t_ptrace.h"

static mpk_domain *d, *d2;
static unsigned char *p2;
static int go_check; /* atomic */
static int to_parent[2], from_parent[2], destroyed[2];

static void *thread_t(void *arg)
{
	char c;
	(void)arg;
	pid_t tid = (pid_t)syscall(SYS_gettid);
	REQUIRE(mpk_set(d, MPK_RW) == 0);
	REQUIRE(write(to_parent[1], &tid, sizeof(tid)) == (ssize_t)sizeof(tid));
	REQUIRE(read(from_parent[0], &c, 1) == 1); /* traced now */
	while (!__atomic_load_n(&go_check, __ATOMIC_SEQ_CST))
		; /* user space only */
	CHECK_NO_STALE_RIGHTS(d2, p2);
	return NULL;
}

static int child(void)
{
	pthread_t t;
	struct mpk_info in;
	char c;

	REQUIRE(d = mpk_domain_create("slow", MPK_NONE, 0));
	int k = mpk_domain_key(d);
	REQUIRE(pthread_create(&t, NULL, thread_t, NULL) == 0);
	REQUIRE(read(from_parent[0], &c, 1) == 1); /* T is traced */
	REQUIRE(mpk_domain_destroy(d) == 0);
	REQUIRE(write(destroyed[1], "d", 1) == 1);
	REQUIRE(mpk_info(&in) == 0);
	CHECK(in.keys_in_use == 0); /* the key went back to the kernel */
	REQUIRE(d2 = mpk_domain_create("slow-new", MPK_NONE, 0));
	REQUIRE(p2 = mpk_alloc(d2, 4096));
	CHECK(mpk_domain_key(d2) == k);
	__atomic_store_n(&go_check, 1, __ATOMIC_SEQ_CST);
	REQUIRE(pthread_join(t, NULL) == 0);
	return t_done();
}

/* Voluntary context switches of a task: each sleep between polls is one. */
static long switches(pid_t pid, pid_t tid)
{
	char path[64], line[128];
	long n = -1;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "voluntary_ctxt_switches:", 24))
			n = strtol(line + 24, NULL, 10);
	fclose(f);
	return n;
}

int main(void)
{
	int st;
	pid_t tid;

	t_need_hw();
	REQUIRE(pipe(to_parent) == 0 && pipe(from_parent) == 0 && pipe(destroyed) == 0);
	pid_t pid = t_fork_seize(child, to_parent[0], &tid);
	REQUIRE(write(from_parent[1], "gg", 2) == 2); /* one for T, one for main */

	/* The revoke arrives; deliver it and stop on the handler's first
	 * instruction. */
	REQUIRE(waitpid(tid, &st, __WALL) == tid);
	REQUIRE(WIFSTOPPED(st) && !(st >> 16));
	int sig = WSTOPSIG(st);
	CHECK(sig >= SIGRTMIN && sig <= SIGRTMAX);
	REQUIRE(ptrace(PTRACE_SINGLESTEP, tid, 0, (void *)(intptr_t)sig) == 0);
	REQUIRE(waitpid(tid, &st, __WALL) == tid);
	REQUIRE(WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP);

	/* Hold T there until main (the child's first thread) has slept twice
	 * since - so it polled T in between - or gave up and went on. */
	long v0 = switches(pid, pid);
	REQUIRE(v0 >= 0);
	struct pollfd pfd = { .fd = destroyed[0], .events = POLLIN };
	while (poll(&pfd, 1, 0) == 0 && switches(pid, pid) < v0 + 2)
		sched_yield();
	REQUIRE(ptrace(PTRACE_DETACH, tid, 0, 0) == 0);

	REQUIRE(waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		t_fail("the child failed (status 0x%x)", st);
	return t_done();
}
