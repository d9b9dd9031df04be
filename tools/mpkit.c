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
#include "env.h"
#include "cli.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mpkit [--help] [--version] COMMAND [ARGS]\n"
		"\n"
		"commands:\n"
		"  info [--json]   protection-key support of this CPU and kernel, the\n"
		"                  backend mpkit would use, free keys, PKRU\n"
		"  maps PID|self [--all] [--json] | --check\n"
		"                  a process's mpkit regions: domain, protection key,\n"
		"                  permissions (--all: every mapping)\n"
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
		"  bench alloc     heaps against malloc, vaults against libsodium\n"
		"  bench threads   rights changes for one thread and all, against mprotect\n"
		"  bench --scale [--smoke]  lookups and faults at 10..100,000 regions, no-change\n"
		"                  sets at 1..8 threads, save/restore at 1..1,000 domains,\n"
		"                  broadcasts, fast-path instruction counts, side by side\n"
		"\n"
		"environment:\n"
		"  MPKIT_BACKEND=hw|soft|auto   backend choice (default auto)\n"
		"  MPKIT_KEYS=N                 most hardware keys mpkit takes (1-15)\n"
		"  MPKIT_HEAP_META=open|closed|auto  heap metadata closed between calls\n"
		"--json has the aliases -J and -j.\n");
}

static const char *yes(int v)
{
	return v ? "yes" : "no";
}

int cli_is_json_flag(const char *a)
{
	return !strcmp(a, "--json") || !strcmp(a, "-J") || !strcmp(a, "-j");
}

/* stdout reached its destination: a write error (a full disk, a closed
 * pipe, /dev/full) is a failure of the command. */
int cli_finish_output(const char *cmd, int rc)
{
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "mpkit %s: writing the output failed: %s\n", cmd, strerror(errno));
		return 1;
	}
	return rc;
}

void cli_json_str(const char *s)
{
	putchar('"');
	for (; s && *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

/* Each variable: unset (the default), a good value, or a bad one. */
static int env_report(int json)
{
	int bad = 0;

	for (int v = 0; v < MPK_ENV_COUNT; v++) {
		const char *val = mpk__env_value(v);
		int ok = mpk__env_parse(v, 15) >= 0;
		bad |= !ok;
		if (json) {
			printf("%s\n    ", v ? "," : "");
			cli_json_str(mpk__env_name(v));
			printf(": { \"value\": ");
			if (val)
				cli_json_str(val);
			else
				printf("null");
			printf(", \"valid\": %s, \"allowed\": ", ok ? "true" : "false");
			cli_json_str(mpk__env_allowed(v));
			printf(" }");
		} else {
			printf("  %-28s %s%s%s%s\n", mpk__env_name(v), val ? "\"" : "(unset)",
			       val ? val : "", val ? "\"" : "", ok ? "" : "  INVALID");
			if (!ok)
				printf("  %-28s allowed: %s\n", "", mpk__env_allowed(v));
		}
	}
	return bad;
}

static const char *naming_why(const struct mpk_info *in)
{
	if (in->region_names)
		return "the kernel shows regions as [anon:mpk:NAME]";
	if (in->region_names_errno == EINVAL)
		return "the kernel does not name anonymous memory (needs Linux 5.17+ built with "
		       "CONFIG_ANON_VMA_NAME); mpkit maps uses mpkit's registry instead";
	return strerror(in->region_names_errno);
}

static int cmd_info(int argc, char **argv)
{
	struct mpk_info in;
	struct utsname u;
	int json = 0;

	for (int i = 1; i < argc; i++) {
		if (cli_is_json_flag(argv[i])) {
			json = 1;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: mpkit info [--json|-J|-j]\n");
			return cli_finish_output("info", 0);
		} else {
			fprintf(stderr, "mpkit info: unknown argument '%s'\n", argv[i]);
			return 2;
		}
	}
	int rc = mpk_info(&in);
	if (uname(&u))
		strcpy(u.release, "unknown");
	const char *backend = rc ? NULL : mpk_backend_name(in.backend);
	const char *error = rc ? (in.error ? in.error : strerror(errno)) : NULL;

	if (json) {
		printf("{\n");
		printf("  \"version\": \"%s\",\n", mpk_version());
		printf("  \"kernel\": \"%s\",\n", u.release);
		printf("  \"cpu_pku\": %s,\n", in.cpu_pku ? "true" : "false");
		printf("  \"cpu_ospke\": %s,\n", in.cpu_ospke ? "true" : "false");
		printf("  \"kernel_pkeys\": %s,\n", in.kernel_pkeys ? "true" : "false");
		if (backend)
			printf("  \"backend\": \"%s\",\n", backend);
		else
			printf("  \"backend\": null,\n");
		printf("  \"backend_forced\": %s,\n", in.backend_forced ? "true" : "false");
		printf("  \"keys_free\": %d,\n", in.keys_free);
		printf("  \"key_budget\": %d,\n", in.key_budget);
		printf("  \"exec_only\": %s,\n", in.exec_only ? "true" : "false");
		printf("  \"jit_code\": \"%s\",\n", in.backend == MPK_BACKEND_HW ? "key" : "mprotect");
		printf("  \"region_names\": %s,\n", in.region_names ? "true" : "false");
		printf("  \"region_names_why\": ");
		cli_json_str(naming_why(&in));
		printf(",\n");
		if (in.pkru_valid)
			printf("  \"pkru\": \"0x%08x\",\n", in.pkru);
		else
			printf("  \"pkru\": null,\n");
		printf("  \"environment\": {");
		env_report(1);
		printf("\n  },\n");
		if (error) {
			printf("  \"error\": ");
			cli_json_str(error);
			printf(",\n");
		}
		printf("  \"ok\": %s\n}\n", rc ? "false" : "true");
	} else {
		printf("mpkit %s on Linux %s\n", mpk_version(), u.release);
		printf("  CPU protection keys (PKU):   %s\n", yes(in.cpu_pku));
		printf("  enabled by the OS (OSPKE):   %s\n", yes(in.cpu_ospke));
		printf("  kernel pkey_alloc():         %s\n", yes(in.kernel_pkeys));
		if (backend)
			printf("  backend:                     %s%s\n", backend,
			       in.backend_forced ? " (MPKIT_BACKEND)" : " (auto)");
		else
			printf("  backend:                     none: mpkit cannot start\n");
		printf("  keys free now:               %d\n", in.keys_free);
		printf("  key budget:                  %d\n", in.key_budget);
		printf("  execute-only memory:         %s\n", yes(in.exec_only));
		/* What mpk_code_alloc() gives: docs/code.md. */
		printf("  JIT code (mpk_code_alloc):   %s\n", in.backend == MPK_BACKEND_HW
		       ? "rwx, writable by the thread holding the window (key)"
		       : "mprotect flipping r-x <-> rw-, process-wide");
		printf("  region names in maps:        %s (%s)\n", yes(in.region_names), naming_why(&in));
		if (in.pkru_valid)
			printf("  PKRU of this thread:         0x%08x\n", in.pkru);
		printf("environment:\n");
		env_report(0);
		if (error)
			fprintf(stderr, "%s\n", error);
	}
	return cli_finish_output("info", rc ? 1 : 0);
}

/*
 * The benchmarks are programs of their own: they link libsodium for their
 * comparison rows, which the mpkit command and the library do not need,
 * and they fork a process per backend.  `mpkit bench [alloc|threads]`
 * runs mpkit-bench[-alloc|-threads] (`mpkit bench --scale`:
 * mpkit-bench-scale), found next to this binary (the build tree) or in
 * ../libexec/mpkit/ from it (an install).
 */
static int cmd_bench(char **argv)
{
	static const char *const where[] = { "", "/../libexec/mpkit" };
	char self[PATH_MAX], path[PATH_MAX + 64];
	const char *prog = "mpkit-bench";
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0) {
		perror("mpkit bench: /proc/self/exe");
		return 1;
	}
	self[n] = 0;
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = 0;
	if (argv[1] && (!strcmp(argv[1], "alloc") || !strcmp(argv[1], "threads"))) {
		prog = !strcmp(argv[1], "alloc") ? "mpkit-bench-alloc" : "mpkit-bench-threads";
		argv++;
	} else if (argv[1] && !strcmp(argv[1], "--scale")) {
		prog = "mpkit-bench-scale"; /* the program behind make bench-scale */
		argv++;
	}
	for (size_t i = 0; i < sizeof(where) / sizeof(*where); i++) {
		snprintf(path, sizeof(path), "%s%s/%s", slash ? self : ".", where[i], prog);
		if (!access(path, X_OK))
			break;
	}
	if (access(path, X_OK)) {
		fprintf(stderr, "mpkit bench: %s not found next to mpkit or in %s/../libexec/mpkit "
			"(build it with `make benchmarks`, or install the mpkit package)\n", prog, self);
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
	if (!strcmp(argv[1], "maps"))
		return cmd_maps(argc - 1, argv + 1);
	if (!strcmp(argv[1], "bench"))
		return cmd_bench(argv + 1);
	if (!strcmp(argv[1], "watch"))
		return cmd_watch(argv + 1);
	fprintf(stderr, "mpkit: unknown command '%s' (try mpkit --help)\n", argv[1]);
	return 2;
}
