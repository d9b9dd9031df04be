/*
 * hw: a revoke that arrives while a thread is being handed a domain fault
 * is not lost.  Thread T holds RW to domain d (key k) and faults on another
 * domain x; the fault callback opens x and retries.  A tracer (the parent,
 * with ptrace) holds T's SIGSEGV until main's destroy of d has signalled T
 * too, then lets both go: the kernel sets up the SIGSEGV frame and, unless
 * mpkit's fault handler blocks it, delivers the revoke on top of it, where
 * it would edit only the handler's own PKRU, and the handler would then
 * hand T back the old PKRU with k open.  Then main creates d2, which gets
 * key k again: T must have no rights to it.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>

#include "t_ptrace.h"

static mpk_domain *d, *x, *d2;
static unsigned char *px, *p2;
static int go_check; /* atomic */
static int to_parent[2], from_parent[2], to_main[2];

static int on_fault(const struct mpk_fault *f, void *arg)
{
	(void)arg;
	if (f->domain != x)
		return MPK_FAULT_ABORT;
	mpk_set(x, MPK_READ);
	return MPK_FAULT_RETRY;
}

static void *thread_t(void *arg)
{
	char c;
	(void)arg;
	pid_t tid = (pid_t)syscall(SYS_gettid);
	REQUIRE(mpk_set(d, MPK_RW) == 0);
	REQUIRE(mpk_get(x) == MPK_NONE);
	REQUIRE(write(to_parent[1], &tid, sizeof(tid)) == (ssize_t)sizeof(tid));
	REQUIRE(read(from_parent[0], &c, 1) == 1); /* traced now */
	unsigned char v = *(volatile unsigned char *)(px + 1); /* faults */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	CHECK(v == 0x11);
	CHECK(mpk_get(x) == MPK_READ);
	while (!__atomic_load_n(&go_check, __ATOMIC_SEQ_CST))
		sched_yield();
	CHECK_NO_STALE_RIGHTS(d2, p2);
	return NULL;
}

static int child(void)
{
	pthread_t t;
	char c;

	REQUIRE(mpk_fault_handler_install(on_fault, NULL) == 0);
	REQUIRE(x = mpk_domain_create("handler-x", MPK_RW, 0));
	REQUIRE(px = mpk_alloc(x, 4096));
	px[1] = 0x11;
	REQUIRE(mpk_set(x, MPK_NONE) == 0);
	REQUIRE(d = mpk_domain_create("handler-d", MPK_NONE, 0));
	int k = mpk_domain_key(d);
	REQUIRE(pthread_create(&t, NULL, thread_t, NULL) == 0);
	REQUIRE(read(to_main[0], &c, 1) == 1); /* T's SIGSEGV is held */
	REQUIRE(mpk_domain_destroy(d) == 0);
	REQUIRE(d2 = mpk_domain_create("handler-new", MPK_NONE, 0));
	REQUIRE(p2 = mpk_alloc(d2, 4096));
	if (mpk_domain_key(d2) != k)
		printf("note: the new domain got key %d, not %d\n", mpk_domain_key(d2), k);
	__atomic_store_n(&go_check, 1, __ATOMIC_SEQ_CST);
	REQUIRE(pthread_join(t, NULL) == 0);
	return t_done();
}

/* Whether tid has a signal pending for itself (the revoke is thread-directed). */
static int has_pending(pid_t pid, pid_t tid)
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

int main(void)
{
	int st;
	pid_t tid;

	t_need_hw();
	REQUIRE(pipe(to_parent) == 0 && pipe(from_parent) == 0 && pipe(to_main) == 0);
	pid_t pid = t_fork_seize(child, to_parent[0], &tid);
	REQUIRE(write(from_parent[1], "g", 1) == 1);

	/* T's fault: hold it. */
	REQUIRE(waitpid(tid, &st, __WALL) == tid);
	REQUIRE(WIFSTOPPED(st) && !(st >> 16) && WSTOPSIG(st) == SIGSEGV);
	/* Main destroys d; wait until its revoke is pending in T. */
	REQUIRE(write(to_main[1], "d", 1) == 1);
	while (!has_pending(pid, tid))
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
