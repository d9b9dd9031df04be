/* SPDX-License-Identifier: MIT */
/*
 * `mpkit guard --lib libguardtest --lib libguardtwo -- ./guard-two-prog`:
 * two libraries guarded at once, each in a domain of its own, where the
 * second (libguardtwo) links and calls the first.  Calls into each, from
 * one into the other, and from the first back into the second's own code
 * (g_apply() calling a static function of libguardtwo's, which writes
 * libguardtwo's state: the caller's domain stays open while the callee
 * runs) give the unguarded run's output.  The program's write into each
 * library's state faults naming that library's domain and symbol (own,
 * two_state); libguardtwo's code writing libguardtest's state (a stray
 * write from one guarded library into the other) faults, naming the
 * writer's library.  A longjmp out of a callback that runs inside both
 * libraries' gates closes both domains again, and a thread it starts
 * starts with both closed (hw).  Under --heap a block libguardtwo's code
 * allocates is in its domain, and a write into it names that.  --report lists each library's writes under its own
 * name; MPKIT_GUARD_STATS writes a line per library (5 calls each, all
 * from outside: the calls from libguardtwo into libguardtest open its
 * domain).  A library of the list opened later with dlopen() is guarded
 * then, and one never loaded is named (125) while the other was guarded.
 * Per-library options (--lib NAME,deny=all|write,heap|noheap): with
 * libguardtest deny=all and libguardtwo write-only (said per library, or
 * --deny all with libguardtwo,deny=write) the program's read of the
 * first is caught, its read of the second works and its write is
 * caught; libguardtwo,heap puts only libguardtwo's blocks in its domain,
 * --heap with libguardtwo,noheap only libguardtest's (libguardtwo's
 * block is written).  A word --lib does not know is a usage error (2)
 * naming it; the helper, given one in MPKIT_GUARD_LIB, names it and
 * guards the other library.
 * Both backends: soft forced, hw where there are keys.
 */
#include <signal.h>

#include "t_cli.h"
#include "t_exec.h"

static char plain[1 << 12];
static char *extra_env = "MPKIT_GUARD_STATS";
static char *lib1 = "libguardtest", *lib2 = "libguardtwo"; /* the --lib's */

/* mpkit guard --lib lib1 --lib lib2 [more...] -- PROG ARGS,
 * with the backend forced: the wait status; stdout, and stderr too
 * unless quiet, in out. */
static int run(const char *backend, int quiet, char *out, size_t cap, char *const *args)
{
	static char cwd[4096], helper[4200], be[64];
	char *argv[32] = { "mpkit", "guard", "--lib", lib1, "--lib", lib2 };
	int n = 6;

	REQUIRE(getcwd(cwd, sizeof(cwd)));
	snprintf(helper, sizeof(helper), "MPKIT_GUARD_HELPER=%s/libmpkit-guard.so", cwd);
	snprintf(be, sizeof(be), "MPKIT_BACKEND=%s", backend);
	while (*args && n < 31)
		argv[n++] = *args++;
	argv[n] = NULL;
	char *env[] = { helper, be, "MPKIT_GUARD_VERBOSE=1", extra_env, NULL };
	return t_exec_capture(t_cli_prog(), argv, env, !quiet, out, cap);
}

/* PROG stopped by mpkit's report on a write into file's domain, after
 * the guard's line (line: what follows "caught a write "). */
static char out_last[1 << 14]; /* caught()'s run's output */

static void caught(const char *backend, const char *mode, const char *file, const char *line)
{
	char *out = out_last;
	size_t cap = sizeof(out_last);
	char want[256], dom[128];
	const char *code = strcmp(backend, "hw") ? "SEGV_ACCERR" : "SEGV_PKUERR";

	int st = run(backend, 0, out, cap, (char *[]){ "--", "./guard-two-prog", (char *)mode, NULL });
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	snprintf(want, sizeof(want), "mpkit guard: caught a write %s", line);
	snprintf(dom, sizeof(dom), "\nmpkit: protection fault: write of domain \"guard:%s\" at 0x", file);
	const char *g = strstr(out, want), *m = strstr(out, dom);
	CHECK(g != NULL && m != NULL && g < m && t_cli_count(out, "mpkit guard: caught") == 1);
	CHECK(m && strstr(m, code) != NULL);
	CHECK(strstr(out, "read 104 8\n") != NULL && strstr(out, "wrote ") == NULL);
	if (t_failures)
		fprintf(stderr, "%s, %s:\n%s\n", backend, mode, out);
}

static void stats(const char *backend)
{
	static char out[1 << 14], env[64], line[256];
	char path[] = "/tmp/t_guard_multi.XXXXXX";
	int fd = mkstemp(path), seen = 0;

	REQUIRE(fd >= 0);
	close(fd);
	snprintf(env, sizeof(env), "MPKIT_GUARD_STATS=%s", path);
	extra_env = env;
	int st = run(backend, 1, out, sizeof(out), (char *[]){ "--", "./guard-two-prog", NULL });
	extra_env = "MPKIT_GUARD_STATS";
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	FILE *f = fopen(path, "r");
	REQUIRE(f);
	while (fgets(line, sizeof(line), f)) {
		char lib[64], be[16];
		long pid, calls, opens;
		printf("%s: %s", backend, line);
		CHECK(sscanf(line, "mpkit-guard-stats pid=%ld lib=%63s calls=%ld opens=%ld backend=%15s", &pid, lib,
			     &calls, &opens, be) == 5);
		CHECK(calls == 5 && opens == 5 && !strcmp(be, backend));
		seen |= !strcmp(lib, "libguardtest.so") ? 1 : !strcmp(lib, "libguardtwo.so") ? 2 : 4;
	}
	fclose(f);
	unlink(path);
	CHECK(seen == 3);
}

/* PROG stopped by mpkit's report of an access (access, "read" or
 * "write") of file's domain at sym, after the guard's line. */
static void stopped(const char *backend, const char *out, const char *access, const char *file, const char *sym)
{
	char want[256], dom[128];
	const char *code = strcmp(backend, "hw") ? "SEGV_ACCERR" : "SEGV_PKUERR";

	snprintf(want, sizeof(want), "mpkit guard: caught a %s from outside %s into its data: %s+0x0 (%s+0x", access,
		 file, sym, file);
	snprintf(dom, sizeof(dom), "\nmpkit: protection fault: %s of domain \"guard:%s\" at 0x", access, file);
	const char *g = strstr(out, want), *m = strstr(out, dom);
	CHECK(g != NULL && m != NULL && g < m && t_cli_count(out, "mpkit guard: caught") == 1);
	CHECK(m && strstr(m, code) != NULL);
}

/* Each library its own --deny and --heap (--lib NAME,OPTION...), the
 * global options the default of a library that says nothing. */
static void per_lib(const char *backend)
{
	static char out[1 << 14];
	const char *unreadable = "its data cannot be read from outside either\n";

	/* libguardtest deny=all, libguardtwo write-only: a read of the first
	 * is caught, a read of the second works, a write to it is caught;
	 * either way round of saying it. */
	lib1 = "libguardtest,deny=all";
	int st = run(backend, 0, out, sizeof(out), (char *[]){ "--", "./guard-two-prog", NULL });
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT && !strstr(out, "\nread "));
	stopped(backend, out, "read", "libguardtest.so", "own");
	CHECK(t_cli_count(out, unreadable) == 1 && strstr(out, "/libguardtest.so: its data cannot be read"));
	if (t_failures)
		fprintf(stderr, "%s, deny=all:\n%s\n", backend, out);
	for (int k = 0; k < 2; k++) {
		lib1 = k ? "libguardtest" : "libguardtest,deny=all";
		lib2 = k ? "libguardtwo,deny=write" : "libguardtwo";
		st = run(backend, 0, out, sizeof(out),
			 k ? (char *[]){ "--deny", "all", "--", "./guard-two-prog", "read2", NULL }
			   : (char *[]){ "--", "./guard-two-prog", "read2", NULL });
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT && strstr(out, "back 8\ntwo 8\n") &&
		      !strstr(out, "wrote"));
		stopped(backend, out, "write", "libguardtwo.so", "two_state");
		CHECK(t_cli_count(out, unreadable) == 1 && strstr(out, "/libguardtest.so: its data cannot be read"));
		if (t_failures)
			fprintf(stderr, "%s, read2 %d:\n%s\n", backend, k, out);
	}
	lib1 = "libguardtest";
	lib2 = "libguardtwo";

	/* --heap for libguardtwo only: its block is its domain's; with
	 * --heap for every library but libguardtwo (noheap), it is not. */
	lib2 = "libguardtwo,heap";
	st = run(backend, 0, out, sizeof(out), (char *[]){ "--", "./guard-two-prog", "heapwrite", NULL });
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	CHECK(strstr(out, "mpkit guard: caught a write from outside libguardtwo.so into its heap at 0x") != NULL);
	CHECK(strstr(out, ": +0x0 in the 64-byte heap block at 0x") != NULL);
	CHECK(t_cli_count(out, ": the blocks it allocates inside go in domain") == 1 &&
	      strstr(out, "go in domain guard:libguardtwo.so too\n"));
	if (t_failures)
		fprintf(stderr, "%s, libguardtwo,heap:\n%s\n", backend, out);
	lib2 = "libguardtwo,noheap";
	st = run(backend, 0, out, sizeof(out), (char *[]){ "--heap", "--", "./guard-two-prog", "heapwrite", NULL });
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "block 9\nwrote 104 9\n"));
	CHECK(t_cli_count(out, ": the blocks it allocates inside go in domain") == 1 &&
	      strstr(out, "go in domain guard:libguardtest.so too\n"));
	if (t_failures)
		fprintf(stderr, "%s, --heap, libguardtwo,noheap:\n%s\n", backend, out);
	lib2 = "libguardtwo";
}

static void backend_runs(const char *backend)
{
	static char out[1 << 14];

	int st = run(backend, 1, out, sizeof(out), (char *[]){ "--", "./guard-two-prog", NULL });
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && !strcmp(out, plain));
	st = run(backend, 0, out, sizeof(out), (char *[]){ "--", "./guard-two-prog", NULL });
	CHECK(strstr(out, " bytes of data in domain guard:libguardtest.so, 10 functions gated") &&
	      strstr(out, " bytes of data in domain guard:libguardtwo.so, 7 functions gated"));

	caught(backend, "write1", "libguardtest.so", "from outside libguardtest.so into its data: own+0x0 (libguardtest.so+0x6000)\n");
	caught(backend, "write2", "libguardtwo.so", "from outside libguardtwo.so into its data: two_state+0x0 (libguardtwo.so+0x");
	caught(backend, "stray", "libguardtest.so",
	       "from outside libguardtest.so (by libguardtwo.so's code) into its data: own+0x0 (libguardtest.so+0x6000)\n");
	/* A longjmp out of a callback inside both gates closes both. */
	caught(backend, "jump1", "libguardtest.so", "from outside libguardtest.so into its data: own+0x0 (libguardtest.so+0x6000)\n");
	CHECK(strstr(out_last, "jumped\n") != NULL);
	/* A thread a callback inside both starts: closed to both on hw; on
	 * soft rights are process-wide (it writes). */
	if (!strcmp(backend, "hw")) {
		caught(backend, "thread1", "libguardtest.so", "from outside libguardtest.so into its data: own+0x0");
		caught(backend, "thread2", "libguardtwo.so", "from outside libguardtwo.so into its data: two_state+0x0");
	} else {
		int ts = run(backend, 1, out_last, sizeof(out_last), (char *[]){ "--", "./guard-two-prog", "thread2", NULL });
		CHECK(WIFEXITED(ts) && WEXITSTATUS(ts) == 0 && strstr(out_last, "thread wrote\nspawn 9\n") != NULL);
	}
	caught(backend, "jump2", "libguardtwo.so", "from outside libguardtwo.so into its data: two_state+0x0 (libguardtwo.so+0x");
	CHECK(strstr(out_last, "jumped\n") != NULL);

	/* --report: each library's writes listed under its name. */
	st = run(backend, 0, out, sizeof(out), (char *[]){ "--report", "--", "./guard-two-prog", "both", NULL });
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "wrote 11 12\n") != NULL);
	CHECK(strstr(out, "mpkit guard: write of own+0x0 (libguardtest.so+0x6000) at 0x") != NULL);
	CHECK(strstr(out, "mpkit guard: write of two_state+0x0 (libguardtwo.so+0x") != NULL);
	CHECK(strstr(out, ": libguardtest.so: 1 access from outside into its data, by 1 instruction\n") != NULL);
	CHECK(strstr(out, ": libguardtwo.so: 1 access from outside into its data, by 1 instruction\n") != NULL);
	CHECK(strstr(out, ", first of two_state+0x0 (libguardtwo.so+0x") != NULL);
	if (t_failures)
		fprintf(stderr, "%s, --report:\n%s\n", backend, out);
	/* libguardtwo's code writing libguardtest's data: --report names the
	 * writer's library, in its line and in the list. */
	st = run(backend, 0, out, sizeof(out), (char *[]){ "--report", "--", "./guard-two-prog", "stray", NULL });
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(out, "mpkit guard: write of own+0x0 (libguardtest.so+0x6000) at 0x") != NULL);
	CHECK(strstr(out, " from outside the library (by libguardtwo.so's code), by thread ") != NULL);
	CHECK(strstr(out, " write by libguardtwo.so+0x") != NULL &&
	      strstr(out, ", first of own+0x0 (libguardtest.so+0x6000)\n") != NULL);
	if (t_failures)
		fprintf(stderr, "%s, --report stray:\n%s\n", backend, out);
	stats(backend);

	/* --heap: libguardtwo's block is in its domain (freed from outside),
	 * and the program's write into it names that domain. */
	st = run(backend, 1, out, sizeof(out), (char *[]){ "--heap", "--", "./guard-two-prog", "heap", NULL });
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "block 9\nwrote 104 9\n") != NULL);
	st = run(backend, 0, out, sizeof(out), (char *[]){ "--heap", "--", "./guard-two-prog", "heapwrite", NULL });
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	CHECK(strstr(out, "mpkit guard: caught a write from outside libguardtwo.so into its heap at 0x") != NULL);
	CHECK(strstr(out, ": +0x0 in the 64-byte heap block at 0x") != NULL);
	CHECK(strstr(out, " of libguardtwo.so (allocated inside the library)\n") != NULL);
	CHECK(strstr(out, "mpkit: protection fault: write of domain \"guard:libguardtwo.so\"") != NULL);
	if (t_failures)
		fprintf(stderr, "%s, --heap:\n%s\n", backend, out);

	per_lib(backend);

	/* guard-dlprog opens libguardtest with dlopen() and never loads
	 * libguardtwo: the first is guarded then, the second named. */
	st = run(backend, 0, out, sizeof(out), (char *[]){ "--", "./guard-dlprog", NULL });
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 125);
	CHECK(strstr(out, " bytes of data in domain guard:libguardtest.so, 10 functions gated") != NULL);
	CHECK(strstr(out, "mpkit guard: libguardtwo: no such library loaded, at startup or with dlopen: it was not "
			  "guarded\n") != NULL);
	if (t_failures)
		fprintf(stderr, "%s, dlopen:\n%s\n", backend, out);
}

int main(void)
{
	static char out[1 << 12];

	if (access("./guard-two-prog", X_OK) || access("./guard-dlprog", X_OK) || access("./libmpkit-guard.so", R_OK))
		t_skip("guard-two-prog, guard-dlprog or libmpkit-guard.so missing (make tests)");
	int st = t_exec_capture("./guard-two-prog", (char *[]){ "guard-two-prog", NULL }, (char *[]){ NULL }, 1, plain,
				sizeof(plain));
	REQUIRE(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(plain, "call 4003\nback 8\nread 104 8\n"));

	/* The same library twice, a list too long, a colon in a name: 125, 2, 2. */
	st = run("soft", 0, out, sizeof(out), (char *[]){ "--lib", "libguardtest.so", "--", "./guard-two-prog", NULL });
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 125);
	CHECK(strstr(out, "mpkit guard: libguardtest.so: named twice (the same library as another --lib)\n") != NULL);
	st = run("soft", 0, out, sizeof(out),
		 (char *[]){ "--lib", "a", "--lib", "b", "--lib", "c", "--lib", "d", "--lib", "e", "--lib", "f", "--lib",
			     "g", "--", "./guard-two-prog", NULL });
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2 && strstr(out, "mpkit guard: 8 --lib at most\n"));
	st = run("soft", 0, out, sizeof(out), (char *[]){ "--lib", "a:b", "--", "./guard-two-prog", NULL });
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2);

	/* A word --lib does not know: a usage error naming it, PROG not run. */
	static const char *const words[][2] = { { "libguardtest,deny=none", "deny=none" },
						{ "libguardtest,hep", "hep" },
						{ "libguardtest,heap,", "" },
						{ "libguardtest,deny=all,heap=1", "heap=1" } };
	for (size_t k = 0; k < sizeof(words) / sizeof(*words); k++) {
		char want[256];
		st = run("soft", 0, out, sizeof(out), (char *[]){ "--lib", (char *)words[k][0], "--", "./guard-two-prog", NULL });
		snprintf(want, sizeof(want),
			 "mpkit guard: --lib libguardtest: unknown option '%s' (it takes deny=write, deny=all, heap, noheap, "
			 "out=NAME, keep=NAME)\n",
			 words[k][1]);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2 && strstr(out, want) && !strstr(out, "add "));
		if (t_failures)
			fprintf(stderr, "%s:\n%s\n", words[k][0], out);
	}
	/* The helper given such a word in a list set by hand: it names it
	 * and guards the other library (PROG runs: no MPKIT_GUARD_PID). */
	static char pre[4200], cwd[4096];
	REQUIRE(getcwd(cwd, sizeof(cwd)));
	snprintf(pre, sizeof(pre), "LD_PRELOAD=%s/libmpkit-guard.so", cwd);
	st = t_exec_capture("./guard-two-prog", (char *[]){ "guard-two-prog", NULL },
			    (char *[]){ pre, "MPKIT_BACKEND=soft", "MPKIT_GUARD_VERBOSE=1",
					"MPKIT_GUARD_LIB=libguardtest,hep:libguardtwo,deny=all", NULL },
			    1, out, sizeof(out));
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	CHECK(strstr(out, "mpkit guard: libguardtest: unknown option 'hep' (it takes deny=write, deny=all, heap, "
			  "noheap, out=NAME, keep=NAME)\n") && !strstr(out, "domain guard:libguardtest.so"));
	CHECK(strstr(out, "mpkit guard: caught a read from outside libguardtwo.so into its data: two_state+0x0"));
	if (t_failures)
		fprintf(stderr, "MPKIT_GUARD_LIB with a bad word:\n%s\n", out);
	/* The name before its options still a file name. */
	st = run("soft", 0, out, sizeof(out), (char *[]){ "--lib", "./libguardtest,heap", "--", "./guard-two-prog", NULL });
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2 && strstr(out, "--lib takes the library's file name, not a path"));

	backend_runs("soft");
	if (t_backend() == MPK_BACKEND_HW)
		backend_runs("hw");
	return t_done();
}
