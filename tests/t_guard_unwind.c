/*
 * Exceptions and forced unwinds across `mpkit guard`'s gate
 * (docs/guard.md, "Unwinding"), with guard-xxprog and its C++ library
 * libguardxx.so: thrown in the library and caught by the program; thrown
 * by a callback through the library's frames; through two gates (library,
 * callback, library); caught in a callback inside the library, which then
 * writes the state with the library's rights; uncaught, which terminates
 * with the C++ runtime's message; pthread_cancel() of a thread blocked in
 * the library and pthread_exit() from a callback, whose cleanup handlers
 * outside the library run.  Each runs 1500 times, more than the shadow
 * stack's 1024 entries (a frame left there aborts the run), counts the
 * library's destructors (each ran), prints what it caught as the
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
	if (t_failures)
		fprintf(stderr, "%s, %s:\n%s\nunguarded:\n%s\n", backend, mode, out, plain);
}

static void backend_runs(const char *backend, const char *code)
{
	static char out[1 << 14];

	unwinds(backend, code, "throw", "caught 1500: thrown in the library 1500, undone 1500\n");
	unwinds(backend, code, "callback", "caught 1500: thrown by the callback 1500, undone 1500\n");
	/* Two destructors a round, and the inner catch's two more (the
	 * callback's write landed: 3000 + 2 + 100 + 1 after it). */
	unwinds(backend, code, "nested", "inner 1\ncaught 1500: thrown in the library 3000, undone 3002\n");
	/* 1500 threads each cancelled, or exited with 42, inside; each ran the
	 * cleanup handler of its start routine, outside the library. */
	unwinds(backend, code, "cancel", "cancelled 1500, cleanups 1500, undone 1500\n");
	unwinds(backend, code, "exit", "exited 63000, cleanups 1500, undone 1500\n");

	/* Nothing catches it: terminate(), the runtime's message, abort. */
	int st = guard_xx(backend, "uncaught", out, sizeof(out));
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	CHECK(strstr(out, "throwing\nterminate called after throwing an instance of 'std::runtime_error'\n"
			  "  what():  thrown in the library 1\n") != NULL);
	CHECK(strstr(out, "not caught") == NULL && strstr(out, "protection fault") == NULL);
	if (t_failures)
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
