/* SPDX-License-Identifier: MIT */
/*
 * Every installed command works from where it is installed (issue 24,
 * item 1): the staged install (STAGE, a DESTDIR whose programs were
 * stripped as packages strip them), run with no LD_LIBRARY_PATH and no
 * MPKIT_WATCH_LIB, from a directory that is not the build tree:
 *   - bin/mpkit --version, info, maps self and scan of itself;
 *   - mpkit watch finds libmpkit-watch.so in libexec/mpkit/ and watches a
 *     global of this program (write reported, exit 0);
 *   - mpkit bench [alloc|threads|malloc|guard|--scale] --help reach the
 *     benchmarks in libexec/mpkit/; mpkit bench --smoke and --scale --smoke
 *     read the hw fast path's instructions from the stripped files; mpkit
 *     bench malloc --smoke runs the drop-in in libexec/mpkit/ (where sort
 *     is GNU's), bench guard --smoke the guard helper there (where
 *     sqlite3 is);
 *   - mpkit and the benchmarks that link libmpkit.so load the staged
 *     libmpkit.so.0, not the build tree's.
 * Skips where the stage is not (the VM).
 */
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <sys/auxv.h>

#include "t_exec.h"

#ifndef STAGE
#error "STAGE: the staged install's PREFIX under DESTDIR"
#endif

long installed_watched; /* watched by `mpkit watch` (linked -rdynamic) */

static char out[1 << 17];

/* This program's interpreter, as the staged programs' (built alike): its
 * --list is what ldd runs, and it lists musl's programs too, which
 * glibc's ldd cannot. */
static const char *interp(void)
{
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)getauxval(AT_PHDR);
	size_t n = getauxval(AT_PHNUM);
	uintptr_t base = 0;

	for (size_t i = 0; i < n; i++)
		if (ph[i].p_type == PT_PHDR)
			base = (uintptr_t)ph - ph[i].p_vaddr;
	for (size_t i = 0; i < n; i++)
		if (ph[i].p_type == PT_INTERP)
			return (const char *)(base + ph[i].p_vaddr);
	return "ldd";
}

/* bin/mpkit ARGS... from the stage, with env (see t_exec_capture); its
 * stdout and stderr in out; the exit status, or 128 + signal. */
static int mpkit(char *const env[], const char *const *args)
{
	char *argv[16] = { STAGE "/bin/mpkit" };
	for (int i = 0; args[i] && i < 14; i++)
		argv[i + 1] = (char *)args[i];
	int st = t_exec_capture(argv[0], argv, env, 1, out, sizeof(out));
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void ok(const char *what, int status, const char *want)
{
	if (status != 0 || (want && !strstr(out, want)))
		t_fail("%s: exit %d, want 0%s%s; output:\n%s", what, status, want ? " and " : "",
		       want ? want : "", out);
}

int main(int argc, char **argv)
{
	static char self[PATH_MAX], env_watch[64] = "MPKIT_WATCH=installed_watched";
	char *env[] = { "LD_LIBRARY_PATH", "MPKIT_WATCH_LIB", "MPKIT_WATCH", "MPKIT_WATCH_OUT", NULL, NULL };
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	/* Run by `mpkit watch` below: the write it must report. */
	if (argc > 1 && !strcmp(argv[1], "--be-watched")) {
		installed_watched = 42;
		printf("wrote %ld\n", installed_watched);
		return 0;
	}
	if (access(STAGE "/bin/mpkit", X_OK))
		t_skip("no staged install at " STAGE " (make tests stages it; not in the VM)");
	REQUIRE(n > 0 && !chdir("/"));
	self[n] = 0;

	ok("--version", mpkit(env, (const char *[]){ "--version", NULL }), "mpkit ");
	ok("info", mpkit(env, (const char *[]){ "info", NULL }), "backend:");
	ok("maps self", mpkit(env, (const char *[]){ "maps", "self", NULL }), NULL);
	int st = mpkit(env, (const char *[]){ "scan", STAGE "/bin/mpkit", NULL });
	if (st != 0 && st != 1)
		t_fail("scan bin/mpkit: exit %d:\n%s", st, out);

	/* The command's own libraries: the staged libmpkit.so.0. */
	snprintf(out, sizeof(out), "for p in " STAGE "/bin/mpkit " STAGE "/libexec/mpkit/mpkit-bench; do %s --list $p; done "
		 "| grep -c '=> " STAGE "/.*lib/libmpkit.so.0 ' | grep -qx 2", interp());
	if (system(out))
		t_fail("bin/mpkit and libexec/mpkit/mpkit-bench do not both load " STAGE "/lib/libmpkit.so.0");

	/* watch: the helper from libexec/mpkit/, nothing set by the caller. */
	env[2] = env_watch;
#ifdef __SANITIZE_ADDRESS__
	/* A sanitizer build installs an instrumented helper, preloaded ahead
	 * of the watched (instrumented) program's ASan runtime. */
	env[4] = "ASAN_OPTIONS=verify_asan_link_order=0";
#endif
	st = mpkit(env, (const char *[]){ "watch", "--", self, "--be-watched", NULL });
	ok("watch", st, "wrote 42");
	ok("watch", st, "write of installed_watched+0");
	env[2] = "MPKIT_WATCH";

	static const char *const helps[][4] = {
		{ "bench", "--help" }, { "bench", "alloc", "--help" },
		{ "bench", "threads", "--help" }, { "bench", "--scale", "--help" },
		{ "bench", "malloc", "--help" }, { "bench", "guard", "--help" },
	};
	for (size_t i = 0; i < sizeof(helps) / sizeof(*helps); i++)
		ok(helps[i][1], mpkit(env, helps[i]), "usage");

	/* The stripped benchmark and library still give the fast path. */
	st = mpkit(env, (const char *[]){ "bench", "--smoke", "--quiet", "--json", "-", NULL });
	ok("bench --smoke --json -", st, "\"hw_fast_path\": {\"ok\": true");
	st = mpkit(env, (const char *[]){ "bench", "--scale", "--smoke", NULL });
	ok("bench --scale --smoke", st, "fast path (objdump of ");
	if (strstr(out, "objdump found no") || strstr(out, "objdump showed no") ||
	    !strstr(out, "mpk_set"))
		t_fail("bench --scale --smoke: no fast path from the stripped program:\n%s", out);
	/* The drop-in from libexec/mpkit/ in a plain program (sort).  Not in
	 * a sanitizer build: its stage's libmpkit.so, which the drop-in
	 * links, is instrumented, and a plain program cannot load it (the
	 * plain builds check this, and check-deb).  Nor for another C library
	 * than glibc: Debian's sort is glibc's. */
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
	if (!system("sort --version 2>/dev/null | grep -q GNU")) {
		st = mpkit(env, (const char *[]){ "bench", "malloc", "--smoke", "--quiet", "--workloads", "sort",
						   "--allocators", "open", NULL });
		ok("bench malloc --smoke", st, STAGE "/libexec/mpkit/libmpkit-malloc.so, MPKIT_HEAP_META=open");
		ok("bench malloc --smoke", st, "\n  sort ");
	}
	if (!system("sqlite3 -version >/dev/null 2>&1")) {
		st = mpkit(env, (const char *[]){ "bench", "guard", "--smoke", "--quiet", "--workloads", "sqlite", NULL });
		ok("bench guard --smoke", st, "helper: " STAGE "/libexec/mpkit/libmpkit-guard.so");
		ok("bench guard --smoke", st, "\n  sqlite     libsqlite3 ");
	}
#endif
	return t_done();
}
