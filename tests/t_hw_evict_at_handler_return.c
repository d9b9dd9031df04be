/*
 * hw, virtual domains (issue 20, item 4): a broadcast that lands while a
 * thread is in the restorer, returning from the program's own SIGSEGV
 * handler (its ret has popped the frame's first word, rt_sigreturn has not
 * run yet), reaches the code the handler returns to.  Budget 2.  In a
 * child, thread T holds RW to A (key k1); main holds none to A and has
 * made C (key k2), closed in both.  T reads a PROT_NONE page; the program's
 * handler opens it and returns.  The tracer (the parent, with ptrace)
 * steps T through its handler until it stands on the restorer, then lets
 * main call mpk_set_all(C, READ), whose signal T takes right there.  Then
 * main creates B with RW, which needs a key: A must not be evicted (T's
 * own code holds RW, main none), so C goes (every thread READ) and B gets
 * its key.  After the handler: T holds RW to A, READ to C (the set_all
 * reached its own code), nothing of B.  Twice: the handler blocking
 * SIGSEGV, then installed with SA_NODEFER and an empty sa_mask (a probe
 * handler, t_vdom_fault_probes).  Before the fix the search for outer
 * frames began at the stack pointer, 8 bytes above the frame the restorer
 * returns through: the set_all edited only the handler's PKRU, which
 * sigreturn throws away, and left T published as holding A closed; A was
 * evicted as closed everywhere and T lost it (t_vdom_fault_probes' rare
 * "mpk_get of its domain is 0, holds 1, key now -1").
 */
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include "t_parked.h"
#include "t_ptrace.h"

static mpk_domain *A, *B, *C;
static unsigned char *pa, *pb, *pc, *guard;
static int to_parent[2], from_parent[2], to_main[2];
static int go_check; /* atomic */
static bool nodefer;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if ((unsigned char *)si->si_addr != guard || mprotect(guard, 4096, PROT_READ))
		_exit(3);
}

static void *thread_t(void *arg)
{
	char c;
	(void)arg;
	pid_t tid = (pid_t)syscall(SYS_gettid);
	REQUIRE(A = mpk_domain_create("A", MPK_RW, 0));
	REQUIRE(pa = mpk_alloc(A, 4096));
	pa[1] = 11;
	REQUIRE(write(to_parent[1], &tid, sizeof(tid)) == (ssize_t)sizeof(tid));
	REQUIRE(read(from_parent[0], &c, 1) == 1); /* traced now */
	(void)*(volatile unsigned char *)guard;   /* the handler, stepped */
	while (!__atomic_load_n(&go_check, __ATOMIC_SEQ_CST))
		sched_yield();

	t_park_check_abc(A, pa, B, pb, C, pc);
	return NULL;
}

static int child(void)
{
	struct sigaction sa;
	pthread_t t;
	char c;

	REQUIRE(mpk_set_key_budget(2) == 0);
	guard = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(guard != MAP_FAILED);
	/* mprotect() bound now: the tracer steps the handler's call. */
	REQUIRE(mprotect(guard, 4096, PROT_NONE) == 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO | (nodefer ? SA_NODEFER : 0);
	REQUIRE(sigaction(SIGSEGV, &sa, NULL) == 0);

	REQUIRE(C = mpk_domain_create("C", MPK_RW, 0));
	REQUIRE(pc = mpk_alloc(C, 4096));
	pc[3] = 33;
	REQUIRE(mpk_set(C, MPK_NONE) == 0);
	REQUIRE(pthread_create(&t, NULL, thread_t, NULL) == 0);
	REQUIRE(read(to_main[0], &c, 1) == 1); /* T stands on the restorer */
	REQUIRE(mpk_domain_key(A) > 0 && mpk_domain_key(C) > 0);

	REQUIRE(mpk_set_all(C, MPK_READ) == 0);
	int kc = mpk_domain_key(C);
	REQUIRE(B = mpk_domain_create("B", MPK_RW, 0));
	REQUIRE(pb = mpk_alloc(B, 4096));
	pb[5] = 55;
	if (mpk_domain_key(A) < 0)
		t_fail("A was evicted: T's own code holds RW to it");
	CHECK_ERR(mpk_domain_key(C), ENOENT);
	CHECK(mpk_domain_key(B) == kc);
	__atomic_store_n(&go_check, 1, __ATOMIC_SEQ_CST);
	REQUIRE(pthread_join(t, NULL) == 0);
	CHECK(pc[3] == 33); /* main holds READ to C too */
	return t_done();
}

/* The C library's restorer: the same in the child (fork keeps the
 * mappings), read raw from an action it installed here. */
static uintptr_t restorer(void)
{
	struct {
		uintptr_t handler;
		unsigned long flags;
		uintptr_t restorer;
		uint64_t mask;
	} k;
	REQUIRE(syscall(SYS_rt_sigaction, SIGSEGV, NULL, &k, sizeof(k.mask)) == 0);
	REQUIRE(k.restorer);
	return k.restorer;
}

static pid_t pid; /* the child */

/* Give up: the child goes too. */
#define FATAL(...)                                                             \
	do {                                                                   \
		t_fail(__VA_ARGS__);                                           \
		kill(pid, SIGKILL);                                            \
		exit(t_done());                                                \
	} while (0)

static void stopped(pid_t tid, int want)
{
	int st;
	REQUIRE(waitpid(tid, &st, __WALL) == tid);
	if (!WIFSTOPPED(st) || (st >> 16) || WSTOPSIG(st) != want)
		FATAL("T: status 0x%x, not stopped by signal %d", st, want);
}

static void run(bool nd)
{
	struct user_regs_struct regs;
	struct sigaction sa;
	pid_t tid;
	int st;

	nodefer = nd;
	/* An action set through the C library, which adds its restorer. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	REQUIRE(sigaction(SIGSEGV, &sa, NULL) == 0);
	uintptr_t rest = restorer();
	REQUIRE(pipe(to_parent) == 0 && pipe(from_parent) == 0 && pipe(to_main) == 0);
	pid = t_fork_seize(child, to_parent[0], &tid);
	REQUIRE(write(from_parent[1], "g", 1) == 1);

	/* T's fault; into the handler, then step by step to the restorer. */
	stopped(tid, SIGSEGV);
	REQUIRE(ptrace(PTRACE_SINGLESTEP, tid, 0, (void *)(intptr_t)SIGSEGV) == 0);
	stopped(tid, SIGTRAP);
	int steps = 0;
	for (;;) {
		REQUIRE(ptrace(PTRACE_GETREGS, tid, 0, &regs) == 0);
		if (regs.rip == rest)
			break;
		if (++steps > 200000)
			FATAL("T never reached the restorer (at %llx)", (unsigned long long)regs.rip);
		REQUIRE(ptrace(PTRACE_SINGLESTEP, tid, 0, 0) == 0);
		stopped(tid, SIGTRAP);
	}
	/* The handler's ret popped the frame's first word: the restorer. */
	errno = 0;
	long popped = ptrace(PTRACE_PEEKDATA, tid, (void *)(uintptr_t)(regs.rsp - 8), 0);
	REQUIRE(!errno && (uintptr_t)popped == rest);

	/* main's set_all signals T; wait until the signal is pending. */
	REQUIRE(write(to_main[1], "r", 1) == 1);
	while (!t_has_pending(pid, tid))
		sched_yield();
	/* Then pass on every signal until T is done; the first is the
	 * set_all's, delivered on the restorer. */
	uintptr_t first_ip;
	CHECK(t_pass_signals(tid, 0, &first_ip));
	if (first_ip != rest)
		t_fail("the set_all's signal reached T at %lx, not on the restorer %lx",
		       (unsigned long)first_ip, (unsigned long)rest);
	REQUIRE(waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		t_fail("%s: the child failed (status 0x%x)", nd ? "SA_NODEFER" : "SIGSEGV blocked",
		       st);
	close(to_parent[0]), close(to_parent[1]), close(from_parent[0]), close(from_parent[1]);
	close(to_main[0]), close(to_main[1]);
}

int main(void)
{
	t_need_hw();
	run(false);
	run(true);
	return t_done();
}
