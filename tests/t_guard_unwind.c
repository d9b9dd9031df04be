/*
 * Exceptions and forced unwinds across `mpkit guard`'s gate
 * (docs/guard.md, "Unwinding"), with guard-xxprog and its C++ library
 * libguardxx.so: thrown in the library and caught by the program; thrown
 * by a callback through the library's frames; through two gates (library,
 * callback, library); caught in a callback inside the library, which then
 * writes the state with the library's rights; uncaught, which terminates
 * with the C++ runtime's message; a callback, and a function of the
 * library's, called by an export's first instructions (a call the patch
 * moves aside) throw; pthread_cancel() of a thread inside the library
 * (acted on there, and blocked in read()) and pthread_exit()
 * from a callback, whose cleanup handlers outside the library run.
 * Each throw runs 1100 times, more than the shadow stack's 1024 entries
 * (a frame left there aborts the run), each thread case 100 times (a
 * thread has a shadow stack of its own).  Each counts the library's
 * destructors (each ran), prints what it caught as the
 * unguarded run does, then writes the library's state from outside: the
 * domain is closed again, so the write faults, named in mpkit's report
 * (SEGV_PKUERR on hw, SEGV_ACCERR on soft), where unguarded it lands.
 * Both backends: soft forced, hw where there are keys.
 */
#include <signal.h>

#include "t_cli.h"
#include "t_exec.h"

/* mpkit guard --lib libguardxx -- ./guard-xxprog MODE with the backend
 * forced: the wait status, stdout and stderr in out. */
static int guard_xx(const char *backend, const char *mode, char *out, size_t cap)
{
	static char cwd[4096], helper[4200], be[64];

	REQUIRE(getcwd(cwd, sizeof(cwd)));
	snprintf(helper, sizeof(helper), "MPKIT_GUARD_HELPER=%s/libmpkit-guard.so", cwd);
	snprintf(be, sizeof(be), "MPKIT_BACKEND=%s", backend);
	char *argv[] = { "mpkit", "guard", "--lib", "libguardxx", "--", "./guard-xxprog", (char *)mode, NULL };
	char *env[] = { helper, be, NULL };
	return t_exec_capture(t_cli_prog(), argv, env, 1, out, cap);
}

/* MODE guarded: what the unguarded run printed before its write (want),
 * then the write stopped.  Unguarded: want, then the write lands. */
static void unwinds(const char *backend, const char *code, const char *mode, const char *want)
{
	static char out[1 << 14], plain[1 << 14];
	int failed = t_failures;

	int st = t_exec_capture("./guard-xxprog", (char *[]){ "guard-xxprog", (char *)mode, NULL }, (char *[]){ NULL }, 1,
				plain, sizeof(plain));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(plain, want) == plain);
	CHECK(strstr(plain, "wrote after the unwinds") != NULL);

	st = guard_xx(backend, mode, out, sizeof(out));
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	CHECK(strstr(out, want) == out);
	CHECK(strstr(out, "mpkit: protection fault: write of domain \"guard:libguardxx.so\"") != NULL);
	CHECK(strstr(out, "holds read") != NULL);
	CHECK(strstr(out, code) != NULL);
	CHECK(strstr(out, "wrote after the unwinds") == NULL);
	if (t_failures > failed)
		fprintf(stderr, "%s, %s:\n%s\nunguarded:\n%s\n", backend, mode, out, plain);
}

static void backend_runs(const char *backend, const char *code)
{
	static char out[1 << 14];

	unwinds(backend, code, "throw", "caught 1100: thrown in the library 1100, undone 1100\n");
	unwinds(backend, code, "callback", "caught 1100: thrown by the callback 1100, undone 1100\n");
	/* Two destructors a round, and the inner catch's two more (the
	 * callback's write landed: 2200 + 2 + 100 + 1 after it). */
	unwinds(backend, code, "nested", "inner 1\ncaught 1100: thrown in the library 2200, undone 2202\n");
	/* A call the patch moved aside (the export's first instructions):
	 * its callee returns into the export's own code, whose CFI leads on. */
	unwinds(backend, code, "first", "caught 2200: thrown first thing, thrown first thing in the library, undone 0\n");
	/* 100 threads each cancelled, or exited with 42, inside; each ran the
	 * cleanup handler of its start routine, outside the library. */
	unwinds(backend, code, "cancel", "cancelled 100, cleanups 100, undone 100\n");
	unwinds(backend, code, "exit", "exited 4200, cleanups 100, undone 100\n");
	/* Blocked in read() inside: glibc unwinds from its cancellation
	 * signal's handler, which on hw starts with the kernel's default
	 * rights; the unwinder reads the library's personality pointer in its
	 * .data, and its destructors write it: the fault callback gives the
	 * rights back to a thread inside the library (docs/guard.md,
	 * "Signals"). */
	unwinds(backend, code, "blocked", "cancelled 100, cleanups 100, undone 100\n");

	/* Nothing catches it: terminate(), the runtime's message, abort. */
	int failed = t_failures;
	int st = guard_xx(backend, "uncaught", out, sizeof(out));
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	CHECK(strstr(out, "throwing\nterminate called after throwing an instance of 'std::runtime_error'\n"
			  "  what():  thrown in the library 1\n") != NULL);
	CHECK(strstr(out, "not caught") == NULL && strstr(out, "protection fault") == NULL);
	if (t_failures > failed)
		fprintf(stderr, "%s, uncaught:\n%s\n", backend, out);
}

int main(void)
{
	if (access("./libmpkit-guard.so", R_OK))
		t_skip("libmpkit-guard.so missing (make tests)");
	if (access("./guard-xxprog", X_OK) || access("./libguardxx.so", R_OK))
		t_skip("guard-xxprog or libguardxx.so not built: no C++ compiler for this C library (g++, or clang++ "
		       "with clang; musl-gcc has none)");
	backend_runs("soft", "SEGV_ACCERR");
	if (t_backend() == MPK_BACKEND_HW)
		backend_runs("hw", "SEGV_PKUERR");
	return t_done();
}
