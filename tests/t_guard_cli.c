/*
 * `mpkit guard --lib libguardtest -- ./guard-prog`: a program that knows
 * nothing of mpkit calls the guarded library through its PLT, a pointer,
 * dlsym(), with stack and variadic arguments, recursion and a callback
 * that calls back in: its output is the unguarded run's, errno included.
 * Then the program writes the library's state through the pointer the
 * library handed out, past it, and before it: killed by mpkit's report,
 * which names the domain guard:libguardtest.so, the write and the signal
 * code (SEGV_PKUERR and the key on hw, SEGV_ACCERR on soft), after the
 * guard's line naming what was written (own+0x18; unnamed static data
 * at libguardtest.so+0x5fc0, padding that no symbol covers).  Reading it is allowed under --deny write
 * and faults under --deny all.  Rights are the calling thread's on hw:
 * another thread that writes while the main thread is inside the library
 * (in a callback) faults; on soft it writes (rights are process-wide,
 * as documented).  The library's state has a page of its own, covered
 * everywhere; the last page of its data (tail) is covered with glibc and
 * left out with musl, whose loader gives the rest of that page to its
 * malloc: a write there faults with glibc and not with musl, and the
 * helper names the bytes left out.  --report lets each write through and
 * lists them at exit: three writes from one instruction are three
 * faults (the domain closes again after each), reported once whole with
 * the writer's backtrace, the symbol written named, on both backends
 * (hw: the trap handler closes the domain in its frame's PKRU).  A library PROG
 * opens with dlopen() is guarded then, and kept loaded across dlclose();
 * found through LD_LIBRARY_PATH=. (a relative name), it is guarded too.
 * A call single-stepped, guarded and not: on hw the gate adds one WRPKRU
 * each way and no system call, on soft an mprotect() each way (the
 * counts are printed).
 * Threads a callback starts inside the library start closed on hw; the
 * library's own workers start open.  longjmp and siglongjmp out of
 * callbacks close the domain again (both backends).
 * MPKIT_GUARD_STATS counts exactly: guard-prog's "stats" makes 19 calls
 * through the gate (all from outside) in its main thread and a thread
 * that ends, and its child by fork() 3 (3): one line each, the backend
 * named.  g_add2()'s two calls of g_add() through the library's own PLT
 * (sent past the gate) and g_rec()'s 5 through a pointer from its own
 * text (the stub's test) are not among them: 26 calls otherwise, 24
 * before the stubs' test; the verbose line counts that one PLT slot.
 * Bad arguments: 2; a library PROG never loads: PROG runs, then 125.  g_zero(), 3 bytes, is named as not gated and works,
 * and so is g_loop(), whose loop branches back into its first 5 bytes;
 * g_store() starts with test+je, a branch the patch moves.  Both backends: soft forced, hw where there are keys.
 */
#include <signal.h>

#include "t_cli.h"
#include "t_exec.h"

static char plain[1 << 14];
static char *extra_env = "MPKIT_GUARD_STATS"; /* guard_run's: unset, unless a test sets it */

/* mpkit guard ARGS... with the backend forced: the wait status, and
 * stdout in out, and unless quiet stderr too, with MPKIT_GUARD_VERBOSE=1. */
static int guard_run(const char *backend, int quiet, char *out, size_t cap, char *const *args)
{
	static char cwd[4096], helper[4200], be[64], verbose[32];
	char *argv[16] = { "mpkit", "guard" };
	int n = 2;

	REQUIRE(getcwd(cwd, sizeof(cwd)));
	snprintf(helper, sizeof(helper), "MPKIT_GUARD_HELPER=%s/libmpkit-guard.so", cwd);
	snprintf(be, sizeof(be), "MPKIT_BACKEND=%s", backend);
	while (*args && n < 15)
		argv[n++] = *args++;
	argv[n] = NULL;
	/* The exports left ungated are named only when asked. */
	snprintf(verbose, sizeof(verbose), quiet ? "MPKIT_GUARD_VERBOSE" : "MPKIT_GUARD_VERBOSE=1");
	char *env[] = { helper, be, verbose, extra_env, NULL };
	return t_exec_capture(t_cli_prog(), argv, env, !quiet, out, cap);
}

static int guard(const char *backend, char *out, size_t cap, char *const *args)
{
	return guard_run(backend, 0, out, cap, args);
}

/* A fault that stopped PROG (SIGABRT, after mpkit's report): the guard's
 * line names what was accessed (what: "write of SYMBOL+0xOFF (FILE+0xOFF)"
 * or "unnamed static data at FILE+0xOFF"), and mpkit's report after it
 * the domain, the signal code (code) and on hw the key (si_pkey), then
 * the backtrace from the faulting instruction. */
static void caught(int st, const char *out, const char *code, const char *access, const char *what)
{
	char line[256], dom[128];

	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	snprintf(line, sizeof(line), "mpkit guard: caught a %s from outside libguardtest.so into its data: %s\n",
		 access, what);
	snprintf(dom, sizeof(dom), "\nmpkit: protection fault: %s of domain \"guard:libguardtest.so\" at 0x", access);
	const char *g = strstr(out, line), *m = strstr(out, dom);
	CHECK(g != NULL && m != NULL && g < m && t_cli_count(out, "mpkit guard: caught") == 1);
	if (!m)
		return;
	const char *end = strstr(m, "SEGV_");
	CHECK(end && !strncmp(end, code, strlen(code)));
	if (!strcmp(code, "SEGV_PKUERR")) {
		/* key N: si_pkey, the domain's key (never 0, mpkit's own). */
		const char *k = strstr(m, ", key ");
		int key = k && k < end ? atoi(k + 6) : 0;
		CHECK(key >= 1 && key < 16);
	} else {
		CHECK(strstr(m, ", no key (soft backend), SEGV_ACCERR\n") != NULL);
	}
	CHECK(strstr(m, "mpkit:   backtrace, from the faulting instruction") != NULL);
	CHECK(strstr(m, "guard-prog+0x") != NULL); /* the writer, in PROG */
}

/* guard-prog MODE, in which a thread other than the one inside the
 * library writes its state: on hw it faults (no "wrote" in the output),
 * on soft it writes (soft_out), the union being open.  before: what the
 * program prints first, either way. */
static void thread_runs(const char *backend, const char *code, const char *mode, const char *before,
			const char *wrote, const char *soft_out)
{
	static char out[1 << 14];

	int st = guard(backend, out, sizeof(out),
		       (char *[]){ "--lib", "libguardtest", "--", "./guard-prog", (char *)mode, NULL });
	CHECK(strstr(out, before) != NULL);
	if (!strcmp(code, "SEGV_PKUERR")) {
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
		CHECK(strstr(out, "mpkit: protection fault: write of domain \"guard:libguardtest.so\"") != NULL);
		CHECK(strstr(out, code) != NULL);
		CHECK(strstr(out, wrote) == NULL);
	} else {
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		CHECK(strstr(out, soft_out) != NULL);
	}
	if (t_failures)
		fprintf(stderr, "%s, %s:\n%s\n", backend, mode, out);
}

static void backend_runs(const char *backend, const char *code)
{
	static char out[1 << 14];

	int st = guard_run(backend, 1, out, sizeof(out),
			   (char *[]){ "--lib", "libguardtest", "--", "./guard-prog", NULL });
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(!strcmp(out, plain));
	/* The export too short to patch and the one that loops back into
	 * its first 5 bytes are named, and still work (loop 10). */
	st = guard(backend, out, sizeof(out), (char *[]){ "--lib", "libguardtest", "--", "./guard-prog", NULL });
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(out, "mpkit guard: g_zero not gated: shorter than a jump (5 bytes)\n") != NULL);
	CHECK(strstr(out, "mpkit guard: g_loop not gated: a branch into its first 5 bytes, or code the decoder does "
			  "not know\n") != NULL);
	CHECK(strstr(out, "\nloop 10\n") != NULL);
	/* g_add2()'s slot of g_add(), in the library's PLT (lazy with glibc,
	 * bound at load with musl) */
	CHECK(strstr(out, "libguardtest.so: 1 of its own PLT calls of them past the gate\n") != NULL);
#ifdef __GLIBC__
	CHECK(t_cli_count(out, "not gated") == 2);
	CHECK(strstr(out, ": 16384 bytes of data in domain guard:libguardtest.so, 10 functions gated, 2 not\n") != NULL);
	CHECK(strstr(out, "not covered") == NULL);
#else
	/* musl's crti exports _init and _fini (4 bytes each); the last page
	 * of the data (tail and crtstuff's byte) is its malloc's too. */
	CHECK(strstr(out, "mpkit guard: _init not gated: shorter than a jump (5 bytes)\n") != NULL);
	CHECK(strstr(out, "mpkit guard: _fini not gated: shorter than a jump (5 bytes)\n") != NULL);
	CHECK(t_cli_count(out, "not gated") == 4);
	CHECK(strstr(out, ": 12288 bytes of data in domain guard:libguardtest.so, 10 functions gated, 4 not\n") != NULL);
	CHECK(strstr(out, ": its last 16 bytes of data (+0x7000) not covered: their page is shared with the C "
			  "library's malloc\n") != NULL);
#endif
	CHECK(strstr(out, "branch -1 0 205\n") != NULL);
	if (t_failures)
		fprintf(stderr, "%s, calls:\n%s\nunguarded:\n%s\n", backend, out, plain);

	st = guard(backend, out, sizeof(out), (char *[]){ "--lib", "libguardtest.so", "--", "./guard-prog", "write", NULL });
	CHECK(strstr(out, "callback 205\nerrno 42\nungated 0\n") != NULL); /* every call worked first */
	caught(st, out, code, "write", "own+0x0 (libguardtest.so+0x6000)");
	CHECK(strstr(out, "holds read") != NULL);
	CHECK(strstr(out, "wrote") == NULL);
	if (t_failures)
		fprintf(stderr, "%s, write:\n%s\n", backend, out);
	/* Past the pointer handed out, in the same static; and before it,
	 * in padding no symbol covers (ahead of own's 4096-byte alignment). */
	st = guard(backend, out, sizeof(out), (char *[]){ "--lib", "libguardtest", "--", "./guard-prog", "past", NULL });
	caught(st, out, code, "write", "own+0x18 (libguardtest.so+0x6018)");
	CHECK(strstr(out, "wrote") == NULL);
	st = guard(backend, out, sizeof(out), (char *[]){ "--lib", "libguardtest", "--", "./guard-prog", "wild", NULL });
	caught(st, out, code, "write", "unnamed static data at libguardtest.so+0x5fc0");
	CHECK(strstr(out, "wrote") == NULL);
	if (t_failures)
		fprintf(stderr, "%s, past and wild:\n%s\n", backend, out);

	/* The last page of the data: covered with glibc, not with musl. */
	st = guard(backend, out, sizeof(out), (char *[]){ "--lib", "libguardtest", "--", "./guard-prog", "tail", NULL });
#ifdef __GLIBC__
	caught(st, out, code, "write", "tail+0x0 (libguardtest.so+0x7008)");
	CHECK(strstr(out, "wrote tail") == NULL);
#else
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(out, "wrote tail 3\n") != NULL);
#endif
	if (t_failures)
		fprintf(stderr, "%s, tail:\n%s\n", backend, out);

	st = guard(backend, out, sizeof(out), (char *[]){ "--lib", "libguardtest", "--", "./guard-prog", "read", NULL });
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(out, "read 205\n") != NULL);

	/* Nothing stray: the library's destructors read its data at exit
	 * (with musl before this helper's destructor) and must not fault. */
	st = guard(backend, out, sizeof(out), (char *[]){ "--deny", "all", "--lib", "libguardtest", "--", "./guard-prog", NULL });
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(out, "branch -1 0 205\n") != NULL);

	st = guard(backend, out, sizeof(out),
		   (char *[]){ "--deny", "all", "--lib", "libguardtest", "--", "./guard-prog", "read", NULL });
	caught(st, out, code, "read", "own+0x0 (libguardtest.so+0x6000)");
	CHECK(strstr(out, "holds none") != NULL);
	CHECK(strstr(out, "\nread 205") == NULL); /* not "thread 2051" */
	if (t_failures)
		fprintf(stderr, "%s, read under --deny all:\n%s\n", backend, out);

	/* Opened with dlopen() after main(): guarded then, kept loaded. */
	st = guard(backend, out, sizeof(out), (char *[]){ "--lib", "libguardtest", "--", "./guard-dlprog", NULL });
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(out, "mpkit guard: libguardtest: not loaded at startup: guarded if PROG opens it\n") != NULL);
	CHECK(strstr(out, "bytes of data in domain guard:libguardtest.so, 10 functions gated") != NULL);
	CHECK(strstr(out, "dlopen 1 3\n") != NULL);
	st = guard(backend, out, sizeof(out), (char *[]){ "--lib", "libguardtest", "--", "./guard-dlprog", "write", NULL });
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	CHECK(strstr(out, "dlopen 1 3\n") != NULL);
	CHECK(strstr(out, "mpkit: protection fault: write of domain \"guard:libguardtest.so\"") != NULL);
	CHECK(strstr(out, code) != NULL);
	CHECK(strstr(out, "wrote") == NULL);
	st = guard(backend, out, sizeof(out), (char *[]){ "--lib", "libguardtest", "--", "./guard-dlprog", "close", NULL });
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(out, "after dlclose 7\n") != NULL);
	if (t_failures)
		fprintf(stderr, "%s, dlopen:\n%s\n", backend, out);

	/* Found through a relative search path: the loader names it
	 * ./libguardtest.so, at startup and by dlopen(); matched all the
	 * same, its path made absolute. */
	extra_env = "LD_LIBRARY_PATH=.";
	st = guard(backend, out, sizeof(out), (char *[]){ "--lib", "libguardtest", "--", "./guard-prog", "write", NULL });
	CHECK(strstr(out, "/libguardtest.so: 16384 bytes of data in domain guard:libguardtest.so") != NULL ||
	      strstr(out, "/libguardtest.so: 12288 bytes of data in domain guard:libguardtest.so") != NULL);
	CHECK(strstr(out, "./libguardtest.so") == NULL && strstr(out, "not loaded") == NULL);
	caught(st, out, code, "write", "own+0x0 (libguardtest.so+0x6000)");
	st = guard(backend, out, sizeof(out), (char *[]){ "--lib", "libguardtest", "--", "./guard-dlprog", "close", NULL });
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(out, "bytes of data in domain guard:libguardtest.so, 10 functions gated") != NULL);
	CHECK(strstr(out, "after dlclose 7\n") != NULL);
	extra_env = "MPKIT_GUARD_STATS";
	if (t_failures)
		fprintf(stderr, "%s, LD_LIBRARY_PATH=.:\n%s\n", backend, out);

	/* Another thread writes while the main thread is inside (in a
	 * callback). */
	thread_runs(backend, code, "thread", "ungated 0\n", "other thread wrote", "other thread wrote 9\ninside 5\n");
	/* A thread the library starts (its start routine in the library's
	 * text) writes its state; one a callback starts, inside the library,
	 * starts closed on hw (else it copied the open PKRU).  On soft the
	 * write lands either way: the creator is inside, and soft's rights
	 * are the union (a new thread holds only the shared base, read). */
	thread_runs(backend, code, "spawn", "library thread 207\n", "spawned thread wrote",
		    "spawned thread wrote 9\ncallback thread 4\n");

	/* longjmp out of a callback, and siglongjmp from a nested one back
	 * into an outer callback: the gates left are popped (the library
	 * works on, the outer callback still inside), and the domain is
	 * closed again after: the write faults on both backends. */
	st = guard(backend, out, sizeof(out), (char *[]){ "--lib", "libguardtest", "--", "./guard-prog", "jump", NULL });
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	CHECK(strstr(out, "jumped 1, then 306\nnested 516\n") != NULL);
	CHECK(strstr(out, "mpkit: protection fault: write of domain \"guard:libguardtest.so\"") != NULL);
	CHECK(strstr(out, "holds read") != NULL);
	CHECK(strstr(out, code) != NULL);
	CHECK(strstr(out, "wrote after the jumps") == NULL);
	if (t_failures)
		fprintf(stderr, "%s, longjmp:\n%s\n", backend, out);
}

/* One call of g_add() single-stepped in guard-prog, guarded and not:
 * what the gate adds.  hw: one WRPKRU each way, no system call; soft:
 * an mprotect() each way. */
static void count_runs(const char *backend, int hw)
{
	static char out[1 << 14];
	long plain_n = -1, n = -1, w = -1, sys = -1, x;

	int st = t_exec_capture("./guard-prog", (char *[]){ "guard-prog", "count", NULL }, (char *[]){ NULL }, 1, out,
				sizeof(out));
	const char *c = strstr(out, "count ");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && c && sscanf(c, "count %ld steps %ld wrpkru %ld", &plain_n, &x, &x) == 3);
	st = guard_run(backend, 1, out, sizeof(out), (char *[]){ "--lib", "libguardtest", "--", "./guard-prog", "count", NULL });
	c = strstr(out, "count ");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && c &&
	      sscanf(c, "count %ld steps %ld wrpkru %ld syscalls", &n, &w, &sys) == 3);
	CHECK(plain_n > 0 && n > plain_n);
	CHECK(w == (hw ? 2 : 0));
	CHECK(sys == (hw ? 0 : 2));
	printf("t_guard_cli: %s: a gated call of g_add() %ld instructions (%ld ungated: the gate adds %ld), %ld WRPKRU, "
	       "%ld system calls\n", backend, n, plain_n, n - plain_n, w, sys);
	if (t_failures)
		fprintf(stderr, "%s, count:\n%s\n", backend, out);
}

/* MPKIT_GUARD_STATS: a line per process with its own calls. */
static void stats_runs(const char *backend)
{
	static char out[1 << 14], env[64], line[256];
	char path[] = "/tmp/t_guard_stats.XXXXXX"; /* a template each run: mkstemp() fills it */
	long calls[2] = { -1, -1 }, opens[2] = { -1, -1 }, pid[2] = { 0, 0 }, child = -1;
	char be[2][16] = { "", "" };
	int n = 0, fd = mkstemp(path);

	REQUIRE(fd >= 0);
	close(fd);
	snprintf(env, sizeof(env), "MPKIT_GUARD_STATS=%s", path);
	extra_env = env;
	int st = guard_run(backend, 1, out, sizeof(out), (char *[]){ "--lib", "libguardtest", "--", "./guard-prog", "stats", NULL });
	extra_env = "MPKIT_GUARD_STATS";
	const char *c = strstr(out, "stats ");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && c && sscanf(c, "stats %ld", &child) == 1);
	FILE *f = fopen(path, "r");
	REQUIRE(f);
	while (fgets(line, sizeof(line), f)) {
		printf("%s: %s", backend, line);
		if (n < 2 && sscanf(line, "mpkit-guard-stats pid=%ld lib=libguardtest.so calls=%ld opens=%ld backend=%15s",
				    &pid[n], &calls[n], &opens[n], be[n]) == 4)
			n++;
		else
			t_fail("%s: a line more, or not well formed: %s", backend, line);
	}
	fclose(f);
	unlink(path);
	CHECK(n == 2);
	/* The child ends first. */
	CHECK(pid[0] == child && calls[0] == 3 && opens[0] == 3);
	CHECK(pid[1] != child && calls[1] == 19 && opens[1] == 19);
	CHECK(!strcmp(be[0], backend) && !strcmp(be[1], backend));
}

/* --report: every write from outside reported (the first of each
 * instruction whole) and let through, the program run to its end with
 * the unguarded run's output, the list at exit.  Both backends: on hw
 * the trap handler closes the domain again in its signal frame's PKRU
 * (mpk_set_interrupted()). */
static void report_runs(const char *backend)
{
	static char out[1 << 14], quiet[1 << 14];

	int st = guard(backend, out, sizeof(out),
		       (char *[]){ "--report", "--lib", "libguardtest", "--", "./guard-prog", "report", NULL });
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* Three writes from one instruction: the domain closed again after
	 * each (else one fault), and the library works on after them. */
	CHECK(strstr(out, "branch -1 0 205\n") != NULL && strstr(out, "report 3\n") != NULL);
	CHECK(t_cli_count(out, "mpkit guard: write of own+0x0 (libguardtest.so+0x6000) at 0x") == 1);
	CHECK(strstr(out, " from outside the library, by thread ") != NULL);
	CHECK(strstr(out, "\n./guard-prog(+0x") != NULL); /* the writer's backtrace */
	CHECK(strstr(out, "mpkit guard:   3 writes by guard-prog+0x") != NULL);
	CHECK(strstr(out, ", first of own+0x0 (libguardtest.so+0x6000)\n") != NULL);
	CHECK(strstr(out, "protection fault") == NULL && strstr(out, "caught") == NULL);
#ifdef __GLIBC__
	CHECK(t_cli_count(out, "mpkit guard: write of tail+0x0 (libguardtest.so+0x7008) at 0x") == 1);
	CHECK(strstr(out, ": libguardtest.so: 4 accesses from outside into its data, by 2 instructions\n") != NULL);
	CHECK(strstr(out, ", first of tail+0x0 (libguardtest.so+0x7008)\n") != NULL);
#else
	CHECK(strstr(out, "tail+0x0") == NULL); /* not covered with musl */
	CHECK(strstr(out, ": libguardtest.so: 3 accesses from outside into its data, by 1 instruction\n") != NULL);
#endif
	if (t_failures)
		fprintf(stderr, "%s, --report:\n%s\n", backend, out);

	/* No write: the program's output (stdout alone) is the unguarded
	 * run's, and the list is empty. */
	st = guard_run(backend, 1, quiet, sizeof(quiet),
		       (char *[]){ "--report", "--lib", "libguardtest", "--", "./guard-prog", NULL });
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(!strcmp(quiet, plain));
	st = guard(backend, out, sizeof(out), (char *[]){ "--report", "--lib", "libguardtest", "--", "./guard-prog", NULL });
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(out, ": libguardtest.so: 0 accesses from outside into its data, by 0 instructions\n") != NULL);
	CHECK(strstr(out, "mpkit guard:   ") == NULL);

	st = guard(backend, out, sizeof(out),
		   (char *[]){ "--deny", "all", "--report", "--lib", "libguardtest", "--", "./guard-prog", "read", NULL });
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(out, "read 205\n") != NULL);
	CHECK(t_cli_count(out, "mpkit guard: read of own+0x0 (libguardtest.so+0x6000) at 0x") == 1);
	CHECK(strstr(out, ": libguardtest.so: 1 access from outside into its data, by 1 instruction\n") != NULL);
	if (t_failures)
		fprintf(stderr, "%s, --report, --deny all:\n%s\n", backend, out);
}

int main(void)
{
	static char out[1 << 14];

	if (access("./guard-prog", X_OK) || access("./guard-dlprog", X_OK) || access("./libmpkit-guard.so", R_OK))
		t_skip("guard-prog, guard-dlprog or libmpkit-guard.so missing (make tests)");
	int st = t_exec_capture("./guard-prog", (char *[]){ "guard-prog", NULL }, (char *[]){ NULL }, 1, plain,
				sizeof(plain));
	REQUIRE(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(plain, "callback 205\nerrno 42\n"));

	/* Bad input: usage, and a library PROG does not load. */
	CHECK(WEXITSTATUS(guard("soft", out, sizeof(out), (char *[]){ "--", "./guard-prog", NULL })) == 2);
	CHECK(WEXITSTATUS(guard("soft", out, sizeof(out), (char *[]){ "--lib", "libguardtest", NULL })) == 2);
	CHECK(WEXITSTATUS(guard("soft", out, sizeof(out),
				(char *[]){ "--deny", "some", "--lib", "libguardtest", "--", "./guard-prog", NULL })) == 2);
	CHECK(WEXITSTATUS(guard("soft", out, sizeof(out),
				(char *[]){ "--lib", "./libguardtest.so", "--", "./guard-prog", NULL })) == 2);
	/* A library PROG never loads: it runs unguarded, and ends with 125. */
	st = guard("soft", out, sizeof(out), (char *[]){ "--lib", "libnosuch", "--", "./guard-prog", NULL });
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 125);
	CHECK(strstr(out, "mpkit guard: libnosuch: not loaded at startup: guarded if PROG opens it\n") != NULL);
	CHECK(strstr(out, "branch -1 0 205\n") != NULL);
	CHECK(strstr(out, "mpkit guard: libnosuch: no such library loaded, at startup or with dlopen: nothing was "
			  "guarded\n") != NULL);

	backend_runs("soft", "SEGV_ACCERR");
	count_runs("soft", 0);
	stats_runs("soft");
	report_runs("soft");
	if (t_backend() == MPK_BACKEND_HW) {
		backend_runs("hw", "SEGV_PKUERR");
		count_runs("hw", 1);
		stats_runs("hw");
		report_runs("hw");
	}
	return t_done();
}
