/* SPDX-License-Identifier: MIT */
/* mpkit: the command-line tool.  Exit codes: 0 ok, 1 failure, 2 usage. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "mpkit.h"
#include "scan_cmd.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mpkit [--help] [--version] COMMAND [ARGS]\n"
		"\n"
		"commands:\n"
		"  info [--json]   protection-key support of this CPU and kernel, the\n"
		"                  backend mpkit would use, free keys, PKRU\n"
		"  bench [OPTIONS] what keys buy over mprotect(), measured: a table of\n"
		"                  domain switch, mprotect, THP and libsodium costs by\n"
		"                  region size and thread count (mpkit bench --help)\n"
		"  scan [--json] FILE... | --pid PID\n"
		"                  WRPKRU and XRSTOR gadgets in executable code, with\n"
		"                  their symbols; exit 1 if one lies outside mpkit\n"
		"  watch -- PROG [ARGS]  run PROG with watchpoints: MPKIT_WATCH=SYMBOL[:LEN]\n"
		"                  or ADDR+LEN (comma-separated, /r to report reads too),\n"
		"                  MPKIT_WATCH_OUT=FILE; each access is reported with its\n"
		"                  instruction and a backtrace (docs/watch.md)\n"
		"\n"
		"environment:\n"
		"  MPKIT_BACKEND=hw|soft|auto   backend choice (default auto)\n"
		"  MPKIT_KEYS=N                 most hardware keys mpkit takes (1-15)\n");
}

static const char *yes(int v)
{
	return v ? "yes" : "no";
}

static int cmd_info(int argc, char **argv)
{
	struct mpk_info in;
	struct utsname u;
	int json = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: mpkit info [--json]\n");
			return 0;
		} else {
			fprintf(stderr, "mpkit info: unknown argument '%s'\n", argv[i]);
			return 2;
		}
	}
	int rc = mpk_info(&in);
	int err = errno;
	if (uname(&u))
		strcpy(u.release, "unknown");
	const char *backend = mpk_backend_name(in.backend);
	const char *error = rc ? (err == ENOTSUP ? "MPKIT_BACKEND=hw but protection keys are not available"
						 : "invalid MPKIT_BACKEND or MPKIT_KEYS")
			       : NULL;

	if (json) {
		printf("{\n");
		printf("  \"version\": \"%s\",\n", mpk_version());
		printf("  \"kernel\": \"%s\",\n", u.release);
		printf("  \"cpu_pku\": %s,\n", in.cpu_pku ? "true" : "false");
		printf("  \"cpu_ospke\": %s,\n", in.cpu_ospke ? "true" : "false");
		printf("  \"kernel_pkeys\": %s,\n", in.kernel_pkeys ? "true" : "false");
		printf("  \"backend\": \"%s\",\n", backend ? backend : "none");
		printf("  \"backend_forced\": %s,\n", in.backend_forced ? "true" : "false");
		printf("  \"keys_free\": %d,\n", in.keys_free);
		printf("  \"key_budget\": %d,\n", in.key_budget);
		printf("  \"exec_only\": %s,\n", in.exec_only ? "true" : "false");
		printf("  \"jit_code\": \"%s\",\n", in.backend == MPK_BACKEND_HW ? "key" : "mprotect");
		if (in.pkru_valid)
			printf("  \"pkru\": \"0x%08x\",\n", in.pkru);
		else
			printf("  \"pkru\": null,\n");
		if (error)
			printf("  \"error\": \"%s\",\n", error);
		printf("  \"ok\": %s\n}\n", rc ? "false" : "true");
	} else {
		printf("mpkit %s on Linux %s\n", mpk_version(), u.release);
		printf("  CPU protection keys (PKU):   %s\n", yes(in.cpu_pku));
		printf("  enabled by the OS (OSPKE):   %s\n", yes(in.cpu_ospke));
		printf("  kernel pkey_alloc():         %s\n", yes(in.kernel_pkeys));
		printf("  backend:                     %s%s\n", backend ? backend : "none",
		       in.backend_forced ? " (MPKIT_BACKEND)" : " (auto)");
		printf("  keys free now:               %d\n", in.keys_free);
		printf("  key budget:                  %d\n", in.key_budget);
		printf("  execute-only memory:         %s\n", yes(in.exec_only));
		/* What mpk_code_alloc() gives: docs/code.md. */
		printf("  JIT code (mpk_code_alloc):   %s\n", in.backend == MPK_BACKEND_HW
		       ? "rwx, writable by the thread holding the window (key)"
		       : "mprotect flipping r-x <-> rw-, process-wide");
		if (in.pkru_valid)
			printf("  PKRU of this thread:         0x%08x\n", in.pkru);
		if (error)
			fprintf(stderr, "mpkit info: %s\n", error);
	}
	return rc ? 1 : 0;
}

/*
 * The benchmark is its own program, mpkit-bench, next to this binary: it
 * links libsodium for its comparison rows, which the mpkit command and the
 * library do not need, and it forks a process per backend.
 */
static int cmd_bench(char **argv)
{
	char self[PATH_MAX], path[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0) {
		perror("mpkit bench: /proc/self/exe");
		return 1;
	}
	self[n] = 0;
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = 0;
	snprintf(path, sizeof(path), "%s/mpkit-bench", slash ? self : ".");
	if (access(path, X_OK)) {
		fprintf(stderr, "mpkit bench: %s not found (build it with `make` or `make bench`)\n", path);
		return 1;
	}
	setenv("MPKIT_BENCH_PROG", "mpkit bench", 1);
	argv[0] = path;
	execv(path, argv);
	fprintf(stderr, "mpkit bench: cannot run %s: %s\n", path, strerror(errno));
	return 1;
}

/*
 * `mpkit watch -- PROG ARGS`: PROG with libmpkit-watch.so preloaded; the
 * helper is found from MPKIT_WATCH_LIB, else next to this binary, else in
 * ../lib (installed).
 */
static int cmd_watch(char **argv)
{
	char self[PATH_MAX], path[PATH_MAX + 64];
	const char *lib = getenv("MPKIT_WATCH_LIB");

	if (!argv[1] || strcmp(argv[1], "--") || !argv[2]) {
		fprintf(stderr, "usage: MPKIT_WATCH=SPEC mpkit watch -- PROG [ARGS]\n");
		return 2;
	}
	if (!lib || !*lib) {
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		self[n > 0 ? n : 0] = 0;
		char *slash = strrchr(self, '/');
		if (slash)
			*slash = 0;
		snprintf(path, sizeof(path), "%s/libmpkit-watch.so", slash ? self : ".");
		if (access(path, R_OK))
			snprintf(path, sizeof(path), "%s/../lib/libmpkit-watch.so", slash ? self : ".");
		lib = path;
	}
	if (access(lib, R_OK)) {
		fprintf(stderr, "mpkit watch: %s not found (build it with `make`)\n", lib);
		return 1;
	}
	if (!getenv("MPKIT_WATCH"))
		fprintf(stderr, "mpkit watch: MPKIT_WATCH is not set: nothing is watched\n");
	setenv("LD_PRELOAD", lib, 1);
	execvp(argv[2], argv + 2);
	fprintf(stderr, "mpkit watch: cannot run %s: %s\n", argv[2], strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("mpkit %s\n", mpk_version());
		return 0;
	}
	if (!strcmp(argv[1], "info"))
		return cmd_info(argc - 1, argv + 1);
	if (!strcmp(argv[1], "scan"))
		return mpk_cmd_scan(argc - 1, argv + 1);
	if (!strcmp(argv[1], "bench"))
		return cmd_bench(argv + 1);
	if (!strcmp(argv[1], "watch"))
		return cmd_watch(argv + 1);
	fprintf(stderr, "mpkit: unknown command '%s' (try mpkit --help)\n", argv[1]);
	return 2;
}
