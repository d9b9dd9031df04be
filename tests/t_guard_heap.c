/*
 * `mpkit guard --heap --lib libguardheap -- ./guard-heap-prog`: the
 * blocks the library's code allocates while the program is inside it
 * are in its domain.  Protection: the program writes into a block the
 * library handed out, into the block the library keeps after the
 * library freed it (a use after free), past a returned block into the
 * kept one (pointer arithmetic), into a block malloc() returned straight
 * to the gate (a tail call), 0x13 bytes into a block of 21, 8 bytes into
 * a block of 4 (past its end), 0x20000 into one of 200000 (the index's
 * array of big blocks): each faults, the guard's line names the
 * block as the program printed it (start, size asked for, offset; the
 * block arithmetic lands in, not the one it started from; "free heap
 * space" after a free and past the end) and mpkit's names the domain,
 * SEGV_ACCERR on soft, SEGV_PKUERR and the domain's key on hw; under
 * --deny all a read faults too.  Permission: the library writes and grows its blocks
 * (realloc inside keeps them), calloc() and the aligned calls inside;
 * the program reads them, frees them with free(), realloc()s one (the
 * copy is its own, contents kept, writable), writes a block it handed in
 * and one it allocated in a callback, and one from the library's
 * allocator export g_malloc (its name says it allocates: the block is
 * the program's; the library's own call of it gives the library's
 * block): the output is the unguarded run's.
 * Per-export words over that name rule: g_new_ctx's context (a name
 * the rule does not take) faults when the program writes it, and with
 * --lib libguardheap,out=g_new_ctx is the program's, the name made for
 * it inside too; out=g_new* (a glob) takes g_new_buf as well, which a
 * plain name does not; keep=g_malloc makes the allocator export's block
 * the library's (the write faults, naming the domain); the last word
 * wins.  Bad words, and out= without heap, are usage errors (2) naming
 * them; a word that matches no export is said and changes nothing.
 * Under --deny all free() and realloc() of a library block still work
 * (realloc reads it with the domain open).  Without --heap the same
 * writes are let alone.  --report (soft) lets three writes of one
 * instruction through, names the block and offset of the first in its
 * line and in the list at exit.  Both backends:
 * soft forced, hw where there are keys; and under `mpkit run` (the
 * drop-in allocator behind the helper), the same allowed run and write
 * (not in an ASan build, whose mpkit command cannot take the drop-in).
 */
#include <signal.h>

#include "t_cli.h"
#include "t_exec.h"

static char plain[1 << 14];

/* `mpkit run` preloads the drop-in into the mpkit command, which an
 * ASan build instruments: ASan's runtime must come first, and refuses. */
#if defined(__SANITIZE_ADDRESS__)
#define ASAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN_BUILD 1
#endif
#endif
#ifndef ASAN_BUILD
#define ASAN_BUILD 0
#endif

static char helper[4200];

/* mpkit guard ARGS... (args from "mpkit", "guard") with the backend forced: the
 * wait status, stdout and stderr in out. */
static int guard(const char *backend, char *out, size_t cap, char *const *args)
{
	char be[64];

	snprintf(be, sizeof(be), "MPKIT_BACKEND=%s", backend);
	return t_exec_capture(t_cli_prog(), args, (char *[]){ helper, be, "MPKIT_GUARD_VERBOSE=1", NULL },
			      1, out, cap);
}

/* The block guard-heap-prog printed ("block 0x..."), 0 if none. */
static unsigned long long block_of(const char *out)
{
	for (const char *b = out; (b = strstr(b, "block 0x")); b++)
		if (b == out || b[-1] == '\n')
			return strtoull(b + 6, NULL, 16);
	return 0;
}

/* guard-heap-prog MODE under --heap (and deny): killed by the report.
 * The guard's line: the access off bytes from the block the program
 * printed, then named (named: a format whose %llx is that block's start;
 * NULL, just "into its heap at"). */
static void faults(const char *backend, const char *code, const char *lib, const char *deny, const char *mode,
		   const char *what, const char *before, const char *after, long off, const char *named)
{
	static char out[1 << 14];
	char want[384], tail[256];

	int st = guard(backend, out, sizeof(out),
		       (char *[]){ "mpkit", "guard", "--heap", "--deny", (char *)deny, "--lib", (char *)lib, "--", "./guard-heap-prog",
				   (char *)mode, NULL });
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	CHECK(strstr(out, before) != NULL);
	CHECK(strstr(out, after) == NULL);
	unsigned long long blk = block_of(out);
	CHECK(blk != 0);
	snprintf(want, sizeof(want), "mpkit guard: caught a %s from outside libguardheap.so into its heap at 0x", what);
	if (named) {
		snprintf(tail, sizeof(tail), named, blk);
		snprintf(want, sizeof(want), "mpkit guard: caught a %s from outside libguardheap.so into its heap at %#llx: %s\n",
			 what, blk + (unsigned long long)off, tail);
	}
	CHECK(strstr(out, want) != NULL);
	snprintf(want, sizeof(want), "mpkit: protection fault: %s of domain \"guard:libguardheap.so\" at 0x", what);
	CHECK(strstr(out, want) != NULL);
	CHECK(strstr(out, code) != NULL);
	if (!strcmp(code, "SEGV_PKUERR"))
		CHECK(strstr(out, ", key ") != NULL); /* si_pkey */
	if (t_failures)
		fprintf(stderr, "%s, %s, --lib %s --deny %s:\n%s\n", backend, mode, lib, deny, out);
}

/* guard-heap-prog MODE under --heap --lib lib: it runs to its end,
 * printing wrote, and the helper says said. */
static void passes(const char *backend, const char *lib, const char *mode, const char *wrote, const char *said)
{
	static char out[1 << 14];

	int st = guard(backend, out, sizeof(out),
		       (char *[]){ "mpkit", "guard", "--heap", "--lib", (char *)lib, "--", "./guard-heap-prog", (char *)mode,
				   NULL });
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, wrote) != NULL);
	CHECK(strstr(out, said) != NULL);
	if (t_failures)
		fprintf(stderr, "%s, %s, --lib %s:\n%s\n", backend, mode, lib, out);
}

/* The guard's words for an access off bytes into a block of size. */
#define IN(off, size) "+" #off " in the " #size "-byte heap block at %#llx of libguardheap.so (allocated inside the library)"

static void backend_runs(const char *backend, const char *code)
{
	static char out[1 << 14];

	/* Everything allowed: the unguarded run's output, the heap named. */
	int st = guard(backend, out, sizeof(out),
		       (char *[]){ "mpkit", "guard", "--heap", "--lib", "libguardheap", "--", "./guard-heap-prog", NULL });
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(out, ": the blocks it allocates inside go in domain guard:libguardheap.so too\n") != NULL);
	CHECK(strstr(out, plain) != NULL);
	if (t_failures)
		fprintf(stderr, "%s, allowed:\n%s\nunguarded:\n%s\n", backend, out, plain);

	faults(backend, code, "libguardheap", "write", "write", "write", "read abc\n", "wrote", 0, IN(0x0, 4));
	faults(backend, code, "libguardheap", "write", "uaf", "write", "", "wrote after free", 8, "free heap space of libguardheap.so");
	faults(backend, code, "libguardheap", "write", "arith", "write", "apart ", "wrote by arithmetic", 0, IN(0x0, 32));
	faults(backend, code, "libguardheap", "write", "tail", "write", "", "wrote tail", 0, IN(0x0, 100));
	faults(backend, code, "libguardheap", "write", "inner", "write", "", "wrote inner", 0x13, IN(0x13, 21));
	faults(backend, code, "libguardheap", "write", "past", "write", "", "wrote past", 8,
	       "free heap space of libguardheap.so, +0x8 from the 4-byte block at %#llx (past its end)");
	faults(backend, code, "libguardheap", "write", "big", "write", "", "wrote big", 0x20000, IN(0x20000, 200000));
	/* Where a read lands is the C library's string code's choice. */
	faults(backend, code, "libguardheap", "all", "read", "read", "", "read abc", 0, NULL);

	/* out= and keep=: the allocator-name rule overridden, export by
	 * export.  g_new_ctx's context (and the name g_copy made for it
	 * under it) is the library's without the word, the program's with
	 * it; the word names that export alone (g_new_buf's block stays the
	 * library's) unless a glob takes both; keep= makes g_malloc's block
	 * (the program's by the rule) the library's; the last word wins. */
	faults(backend, code, "libguardheap", "write", "ctx", "write", "", "wrote ctx", 8, IN(0x8, 16));
	passes(backend, "libguardheap,out=g_new_ctx", "ctx", "wrote ctx Ctx 7\n",
	       "libguardheap.so: out=g_new_ctx matches 1 export: the blocks allocated under it are the caller's\n");
	faults(backend, code, "libguardheap,out=g_new_ctx", "write", "buf", "write", "", "wrote buf", 0, IN(0x0, 8));
	passes(backend, "libguardheap,out=g_new*", "buf", "wrote buf B\n",
	       "libguardheap.so: out=g_new* matches 2 exports: the blocks allocated under them are the caller's\n");
	faults(backend, code, "libguardheap,keep=g_malloc", "write", "alloc", "write", "", "wrote alloc", 0, IN(0x0, 16));
	faults(backend, code, "libguardheap,out=g_new*,keep=g_new_buf", "write", "buf", "write", "", "wrote buf", 0,
	       IN(0x0, 8));

	/* --deny all: free() and realloc() from outside still work. */
	st = guard(backend, out, sizeof(out),
		   (char *[]){ "mpkit", "guard", "--heap", "--deny", "all", "--lib", "libguardheap", "--", "./guard-heap-prog", "free", NULL });
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(out, "free abcdef\n") != NULL);
	if (t_failures)
		fprintf(stderr, "%s, free under --deny all:\n%s\n", backend, out);

	/* Without --heap the blocks are ordinary. */
	st = guard(backend, out, sizeof(out), (char *[]){ "mpkit", "guard", "--lib", "libguardheap", "--", "./guard-heap-prog", "write", NULL });
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(out, "wrote Xbc\n") != NULL);
	CHECK(strstr(out, "go in domain") == NULL);
}

/* out= and keep= spelt wrong, or where they say nothing: a usage error
 * naming the word (2, PROG not run); the helper given one by hand names
 * it; a name that matches no export is said, and changes nothing. */
static void words(void)
{
	static char out[1 << 14], many[512] = "libguardheap";
	static const char *const bad[][2] = {
		{ "libguardheap,out=", "bad option 'out=' (it takes an export's name, or a glob of names (* ? [...]))" },
		{ "libguardheap,keep=g_new ctx", "bad option 'keep=g_new ctx'" },
		{ "libguardheap,out=g_new:ctx", "bad option 'out=g_new:ctx'" },
		{ "libguardheap,out", "unknown option 'out' (it takes deny=write, deny=all, heap, noheap, out=NAME, keep=NAME)" },
		{ many, "bad option 'out=g17' (more than 16 out= and keep= for one library)" },
		{ "libguardheap,out=g_new_ctx,noheap", "out= and keep= need heap, not noheap\n" },
	};
	char want[256];
	int st;

	for (int i = 1; i <= 17; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), ",out=g%d", i);
	for (size_t k = 0; k < sizeof(bad) / sizeof(*bad); k++) {
		st = guard("soft", out, sizeof(out),
			   (char *[]){ "mpkit", "guard", "--heap", "--lib", (char *)bad[k][0], "--", "./guard-heap-prog", NULL });
		snprintf(want, sizeof(want), "mpkit guard: --lib libguardheap: %s", bad[k][1]);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2 && strstr(out, want) && !strstr(out, "kept "));
		if (t_failures)
			fprintf(stderr, "%s:\n%s\n", bad[k][0], out);
	}
	/* Without --heap, and heap not said after the name. */
	st = guard("soft", out, sizeof(out),
		   (char *[]){ "mpkit", "guard", "--lib", "libguardheap,out=g_new_ctx", "--", "./guard-heap-prog", NULL });
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2 &&
	      strstr(out, "mpkit guard: --lib libguardheap: out= and keep= need heap (--heap, or heap after the name)\n"));
	/* heap after the name will do. */
	st = guard("soft", out, sizeof(out),
		   (char *[]){ "mpkit", "guard", "--lib", "libguardheap,heap,out=g_new_ctx", "--", "./guard-heap-prog", "ctx",
			       NULL });
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "wrote ctx Ctx 7\n"));
	/* No such export: said even without MPKIT_GUARD_VERBOSE, PROG runs
	 * as the rule alone has it (g_new_ctx's context the library's). */
	char *env[] = { helper, "MPKIT_BACKEND=soft", NULL };
	st = t_exec_capture(t_cli_prog(),
			    (char *[]){ "mpkit", "guard", "--heap", "--lib", "libguardheap,out=g_nosuch*", "--",
					"./guard-heap-prog", "ctx", NULL },
			    env, 1, out, sizeof(out));
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	CHECK(strstr(out, "libguardheap.so: out=g_nosuch* changes nothing: it matches none of its exports\n"));
	CHECK(strstr(out, "mpkit: protection fault: write of domain \"guard:libguardheap.so\"") && !strstr(out, "wrote"));
	if (t_failures)
		fprintf(stderr, "out=g_nosuch*:\n%s\n", out);
	/* The helper given a bad word in a list set by hand: named, the
	 * library left unguarded (PROG runs: no MPKIT_GUARD_PID). */
	static char pre[4200];
	snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", strchr(helper, '=') + 1);
	st = t_exec_capture("./guard-heap-prog", (char *[]){ "guard-heap-prog", "ctx", NULL },
			    (char *[]){ pre, "MPKIT_BACKEND=soft", "MPKIT_GUARD_HEAP=1", "MPKIT_GUARD_LIB=libguardheap,keep=",
					NULL },
			    1, out, sizeof(out));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "wrote ctx Ctx 7\n"));
	CHECK(strstr(out, "mpkit guard: libguardheap: bad option 'keep=' (it takes an export's name, or a glob of names"));
	if (t_failures)
		fprintf(stderr, "MPKIT_GUARD_LIB=libguardheap,keep=:\n%s\n", out);
}

int main(void)
{
	static char out[1 << 14], cwd[4096];

	REQUIRE(getcwd(cwd, sizeof(cwd)));
	snprintf(helper, sizeof(helper), "MPKIT_GUARD_HELPER=%s/libmpkit-guard.so", cwd);
	if (access("./guard-heap-prog", X_OK) || access("./libmpkit-guard.so", R_OK))
		t_skip("guard-heap-prog or libmpkit-guard.so missing (make tests)");
	int st = t_exec_capture("./guard-heap-prog", (char *[]){ "guard-heap-prog", NULL }, (char *[]){ NULL }, 1, plain,
				sizeof(plain));
	REQUIRE(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(plain, "handed in minexxxx\ncallback\nallocator\n"));

	backend_runs("soft", "SEGV_ACCERR");
	/* --report: three writes of one instruction let through, the
	 * program runs on; the first (1 byte into a block of 7) named in its
	 * line and in the list. */
	st = guard("soft", out, sizeof(out),
		   (char *[]){ "mpkit", "guard", "--heap", "--report", "--lib", "libguardheap", "--", "./guard-heap-prog", "report", NULL });
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(out, "report axyzef 108\n") != NULL);
	unsigned long long blk = block_of(out);
	char want[256];
	CHECK(blk != 0);
	snprintf(want, sizeof(want),
		 "mpkit guard: write of +0x1 in the 7-byte heap block at %#llx of libguardheap.so at %#llx from outside the "
		 "library, by thread ",
		 blk, blk + 1);
	CHECK(t_cli_count(out, want) == 1);
	CHECK(t_cli_count(out, "mpkit guard: write of ") == 1);
	CHECK(strstr(out, ": libguardheap.so: 3 accesses from outside into its data, by 1 instruction\n") != NULL);
	snprintf(want, sizeof(want), ", first of +0x1 in the 7-byte heap block at %#llx of libguardheap.so\n", blk);
	CHECK(strstr(out, want) != NULL);
	CHECK(strstr(out, "protection fault") == NULL);
	if (t_failures)
		fprintf(stderr, "--report:\n%s\n", out);
	words();
	if (t_backend() == MPK_BACKEND_HW)
		backend_runs("hw", "SEGV_PKUERR");
	/* Under `mpkit run` (the helper preloaded ahead of the drop-in):
	 * the library's blocks in its domain, the others the drop-in's. */
	if (!ASAN_BUILD && !access("./libmpkit-malloc.so", R_OK)) {
		static char drop[4200];
		snprintf(drop, sizeof(drop), "MPKIT_MALLOC_LIB=%s/libmpkit-malloc.so", cwd);
		char *env[] = { helper, drop, "MPKIT_GUARD_VERBOSE=1", NULL };
		char *argv[] = { "mpkit", "run", (char *)t_cli_prog(), "guard", "--heap", "--lib", "libguardheap", "--",
				 "./guard-heap-prog", NULL, NULL };
		st = t_exec_capture(t_cli_prog(), argv, env, 1, out, sizeof(out));
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, plain) != NULL);
		argv[9] = "write";
		st = t_exec_capture(t_cli_prog(), argv, env, 1, out, sizeof(out));
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
		CHECK(strstr(out, "mpkit: protection fault: write of domain \"guard:libguardheap.so\" at 0x") != NULL);
#ifdef __GLIBC__
		/* With musl the drop-in's constructor runs after the helper's
		 * and installs mpkit's handler without the helper's line. */
		blk = block_of(out);
		snprintf(want, sizeof(want),
			 "mpkit guard: caught a write from outside libguardheap.so into its heap at %#llx: +0x0 in the "
			 "4-byte heap block at %#llx of libguardheap.so (allocated inside the library)\n",
			 blk, blk);
		CHECK(blk && strstr(out, want) != NULL);
#endif
		CHECK(strstr(out, "wrote") == NULL);
		if (t_failures)
			fprintf(stderr, "under mpkit run:\n%s\n", out);
	}
	return t_done();
}
