/*
 * What an open+close of a secret costs in system calls, counted from
 * outside with ptrace (PTRACE_SYSCALL) so that nothing in the process
 * can miss one: between two marker calls the child opens and closes one
 * 32-byte secret eight times, each way (mpk_secret_readonly/_readwrite +
 * mpk_secret_noaccess, MPK_WITH).  On soft every transition is exactly
 * one mprotect() of the secret's page, to the rights asked (PROT_NONE on
 * a close), and no other call (no madvise, futex, getpid, gettid): what
 * libsodium's sodium_mprotect pair makes.  On hw there is none at all.
 * Skips where ptrace is not permitted.
 */
#include <sys/ptrace.h>
#include <sys/user.h>

#include "t.h"

#define PAIRS 8
#define MARK 0x6d706b5bL /* the marker call's first argument */
#define MAXCALLS 64

enum { C_READ, C_RW, C_WITH, NCASES };

static volatile unsigned char sink;

static void mark(long what, const void *p, long c)
{
	syscall(SYS_getppid, MARK + what, p, c);
}

static int child(void)
{
	if (ptrace(PTRACE_TRACEME, 0, 0, 0))
		return 77;
	raise(SIGSTOP);
	mpk_domain *d = mpk_domain_create("t_vault_syscalls", MPK_NONE, 0);
	if (!d)
		return 2;
	unsigned char *k = mpk_secret_alloc(d, 32);
	if (!k)
		return errno == ENOMEM || errno == EPERM || errno == EAGAIN ? 77 : 3;
	/* The first open sets up what the thread keeps (its rights table). */
	if (mpk_secret_readwrite(k) || mpk_secret_noaccess(k))
		return 4;
	for (long c = 0; c < NCASES; c++) {
		mark(0, k, c);
		for (int i = 0; i < PAIRS; i++) {
			if (c == C_WITH) {
				MPK_WITH(d, MPK_READ) {
					sink = k[0];
				}
				continue;
			}
			if ((c == C_RW ? mpk_secret_readwrite(k) : mpk_secret_readonly(k)))
				return 5;
			sink = k[0];
			if (mpk_secret_noaccess(k))
				return 6;
		}
		mark(1, k, c);
	}
	if (mpk_secret_free(k) || mpk_domain_destroy(d))
		return 7;
	return 0;
}

struct call {
	long nr, a0, a1, a2;
};

/* The calls of case c between its markers, checked. */
static void check_case(long c, uintptr_t secret, const struct call *calls, int n, bool hw)
{
	static const char *const what[NCASES] = { "readonly+noaccess", "readwrite+noaccess",
						  "MPK_WITH(READ)" };
	uintptr_t page = secret & ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1);
	long open_prot = c == C_RW ? PROT_READ | PROT_WRITE : PROT_READ;

	printf("%s: %d system calls for %d pairs\n", what[c], n, PAIRS);
	if (hw) {
		CHECK(n == 0); /* WRPKRU only */
		return;
	}
	CHECK(n == 2 * PAIRS);
	for (int i = 0; i < n; i++) {
		const struct call *k = &calls[i];
		if (k->nr != SYS_mprotect || (uintptr_t)k->a0 != page ||
		    k->a1 != sysconf(_SC_PAGESIZE) || k->a2 != (i % 2 ? PROT_NONE : open_prot)) {
			printf("  call %d: nr %ld (%#lx, %ld, %ld); expected mprotect(%#lx, %ld, %ld)\n", i,
			       k->nr, (unsigned long)k->a0, k->a1, k->a2, (unsigned long)page,
			       sysconf(_SC_PAGESIZE), i % 2 ? (long)PROT_NONE : open_prot);
			CHECK(!"one mprotect of the secret's page per transition");
			return; /* the first difference says it */
		}
	}
}

int main(void)
{
	struct mpk_info info;
	struct call calls[MAXCALLS];
	int st, n = 0, seen = 0;
	long c = -1;
	uintptr_t secret = 0;
	bool entry = true;

	REQUIRE(mpk_info(&info) == 0);
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(child());
	REQUIRE(waitpid(pid, &st, 0) == pid);
	if (!WIFSTOPPED(st)) {
		if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
			t_skip("ptrace(PTRACE_TRACEME) not permitted");
		CHECK(!"the child stops for its tracer");
		return t_done();
	}
	REQUIRE(ptrace(PTRACE_SETOPTIONS, pid, 0, (void *)(long)(PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL)) == 0);
	for (int sig = 0;;) {
		REQUIRE(ptrace(PTRACE_SYSCALL, pid, 0, (void *)(long)sig) == 0);
		REQUIRE(waitpid(pid, &st, 0) == pid);
		if (!WIFSTOPPED(st))
			break;
		/* A signal of the child's own is passed on at the next resume. */
		sig = WSTOPSIG(st) == (SIGTRAP | 0x80) ? 0 : WSTOPSIG(st);
		if (sig)
			continue;
		bool was_entry = entry;
		entry = !entry;
		if (!was_entry)
			continue;
		struct user_regs_struct r;
		REQUIRE(ptrace(PTRACE_GETREGS, pid, 0, &r) == 0);
		long nr = (long)r.orig_rax;
		if (nr == SYS_getppid && (long)r.rdi == MARK) {
			c = (long)r.rdx;
			secret = (uintptr_t)r.rsi;
			n = 0;
			continue;
		}
		if (nr == SYS_getppid && (long)r.rdi == MARK + 1) {
			CHECK(c >= 0 && c < NCASES);
			check_case(c, secret, calls, n, info.backend == MPK_BACKEND_HW);
			seen++;
			c = -1;
			continue;
		}
		if (c >= 0 && n < MAXCALLS)
			calls[n++] = (struct call){ nr, (long)r.rdi, (long)r.rsi, (long)r.rdx };
	}
	REQUIRE(WIFEXITED(st) || WIFSIGNALED(st));
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
		t_skip("no secret here (locked memory)");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(seen == NCASES);
	return t_done();
}
