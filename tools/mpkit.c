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
		"commands (mpkit COMMAND --help; man mpkit-COMMAND):\n"
		"  info [--json]   protection-key support of this CPU and kernel, the\n"
		"                  backend mpkit would use, free keys, PKRU\n"
		"  maps PID|self [--all] [--json] | --check\n"
		"                  a process's mpkit regions: domain, protection key,\n"
		"                  permissions (--all: every mapping)\n"
		"  scan [--json] FILE... | --pid PID\n"
		"                  WRPKRU and XRSTOR sites in executable code, with their\n"
		"                  symbols and classes; exit 1 if one is a gadget\n"
		"  watch -- PROG [ARGS]  run PROG with watchpoints on what MPKIT_WATCH names\n"
		"                  (SYMBOL[:LEN] or ADDR+LEN, comma-separated), each access\n"
		"                  reported with its instruction and a backtrace\n"
		"  run [--sealed|--open] [--stats] [--debug] -- PROG [ARGS]\n"
		"                  run PROG with its malloc() on an mpkit heap, the\n"
		"                  heap's metadata closed between calls (default on hw)\n"
		"  symbolize [FILE...]  a saved report's frames as functions and FILE:LINE\n"
		"  bench [OPTIONS] what keys buy over mprotect(), measured: a table of\n"
		"                  domain switch, mprotect, THP and libsodium costs by\n"
		"                  region size and thread count\n"
		"  bench alloc     heaps against malloc, vaults against libsodium\n"
		"  bench vault     secrets in 1-8 threads against libsodium and OpenSSL\n"
		"  bench threads   rights changes for one thread and all, against mprotect\n"
		"  bench malloc [--smoke]  real programs (python3, sqlite3, git, gcc, xz, zstd,\n"
		"                  sort) under glibc, jemalloc, mimalloc and mpkit run's\n"
		"                  allocator, sealed and open: time and peak RSS against glibc\n"
		"  bench --scale [--smoke]  lookups and faults at 10..100,000 regions, no-change\n"
		"                  sets at 1..8 threads, save/restore at 1..1,000 domains,\n"
		"                  broadcasts, fast-path instruction counts, side by side\n"
		"\n"
		"environment:\n"
		"  MPKIT_BACKEND=hw|soft|auto   backend choice (default auto)\n"
		"  MPKIT_KEYS=N                 most hardware keys mpkit takes (1-15)\n"
		"  MPKIT_HEAP_META=open|closed|auto  heap metadata closed between calls\n"
		"  MPKIT_WATCH, MPKIT_WATCH_OUT, MPKIT_WATCH_LIB: mpkit watch --help\n"
		"  MPKIT_REPORT=fd:N|PATH        where reports go (default stderr; %%p: pid)\n"
		"  MPKIT_MALLOC_STATS, MPKIT_MALLOC_DEBUG, MPKIT_MALLOC_LIB: mpkit run --help\n"
		"--json has the aliases -J and -j.\n"
		"documents: %s/ (guide.md first)\n",
		cli_docdir);
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
int cli_output_ok(const char *cmd)
{
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "mpkit%s%s: writing the output failed: %s\n", *cmd ? " " : "", cmd,
			strerror(errno ? errno : EIO));
		return 0;
	}
	return 1;
}

int cli_finish_output(const char *cmd, int rc)
{
	return cli_output_ok(cmd) ? rc : 1;
}

void cli_json_fstr(FILE *f, const char *s)
{
	putc('"', f);
	for (; s && *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			putc(*s, f);
	}
	putc('"', f);
}

void cli_json_str(const char *s)
{
	cli_json_fstr(stdout, s);
}

int cli_helper(const char *cmd, const char *name, char *path, size_t size)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0) {
		fprintf(stderr, "mpkit %s: /proc/self/exe: %s\n", cmd, strerror(errno));
		return -1;
	}
	self[n] = 0;
	*strrchr(self, '/') = 0; /* the kernel gives an absolute path */
	if (!strcmp(cli_libexec, "."))
		snprintf(path, size, "%s/%s", self, name);
	else
		snprintf(path, size, "%s/%s/%s", self, cli_libexec, name);
	if (!access(path, F_OK))
		return 0;
	fprintf(stderr, "mpkit %s: %s not found (%s)\n", cmd, path,
		strcmp(cli_libexec, ".") ? "install mpkit again"
		: strncmp(name, "mpkit-bench", 11) ? "build it with `make`" : "build it with `make benchmarks`");
	return -1;
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

/* Whether secrets are kept from the kernel, and why not. */
static const char *secretmem_why(const struct mpk_info *in)
{
	if (in->secretmem_vaults)
		return "yes: vaults are memfd_secret memory (process_vm_readv, /proc/PID/mem, "
		       "ptrace cannot read them)";
	if (in->secretmem)
		return "no: MPKIT_SECRETMEM=off (memfd_secret works here)";
	if (in->secretmem_errno == ENOSYS)
		return "no: the kernel has no memfd_secret (Linux 5.14+; before 6.5 boot with "
		       "secretmem.enable=1); vaults are ordinary memory";
	static char why[160];
	snprintf(why, sizeof(why), "no: memfd_secret refused (%s); vaults are ordinary memory",
		 strerror(in->secretmem_errno));
	return why;
}

/* Why pkey_alloc() is missing: the CPU, the kernel, or switched off. */
static const char *pkeys_why(const struct mpk_info *in)
{
	char cmd[4096] = "";
	FILE *f;

	if (in->kernel_pkeys)
		return "yes";
	if (!in->cpu_pku)
		return "no: this CPU has no protection keys (PKU)";
	if (in->cpu_ospke)
		return "no: the kernel lacks the pkey system calls (needs Linux 4.9+)";
	if ((f = fopen("/proc/cmdline", "r"))) {
		if (!fgets(cmd, sizeof(cmd), f))
			cmd[0] = 0;
		fclose(f);
	}
	if (strstr(cmd, "nopku"))
		return "no: disabled (nopku on the kernel command line)";
	return "no: the kernel does not enable keys (built without "
	       "CONFIG_X86_INTEL_MEMORY_PROTECTION_KEYS, or older than 4.9)";
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
		printf("  \"kernel_pkeys_why\": ");
		cli_json_str(pkeys_why(&in));
		printf(",\n");
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
		printf("  \"secretmem\": %s,\n", in.secretmem ? "true" : "false");
		printf("  \"secrets_kept_from_kernel\": %s,\n", in.secretmem_vaults ? "true" : "false");
		printf("  \"secretmem_why\": ");
		cli_json_str(secretmem_why(&in));
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
		printf("  kernel pkey_alloc():         %s\n", pkeys_why(&in));
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
		printf("  secrets kept from kernel:    %s\n", secretmem_why(&in));
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
 * and they fork a process per backend.  `mpkit bench
 * [alloc|vault|threads|malloc]` runs mpkit-bench[-alloc|-vault|-threads|
 * -malloc] (`mpkit bench --scale`:
 * mpkit-bench-scale), found in the helpers' directory (tools/paths.c).
 */
static int cmd_bench(char **argv)
{
	char path[PATH_MAX + 64];
	const char *prog = "mpkit-bench";

	if (argv[1] && (!strcmp(argv[1], "alloc") || !strcmp(argv[1], "threads") ||
			!strcmp(argv[1], "vault") || !strcmp(argv[1], "malloc"))) {
		prog = !strcmp(argv[1], "alloc")    ? "mpkit-bench-alloc"
		       : !strcmp(argv[1], "vault")  ? "mpkit-bench-vault"
		       : !strcmp(argv[1], "malloc") ? "mpkit-bench-malloc"
						    : "mpkit-bench-threads";
		argv++;
	} else if (argv[1] && !strcmp(argv[1], "--scale")) {
		prog = "mpkit-bench-scale"; /* the program behind make bench-scale */
		argv++;
	}
	if (cli_helper("bench", prog, path, sizeof(path)))
		return 1;
	setenv("MPKIT_BENCH_PROG", "mpkit bench", 1);
	argv[0] = path;
	execv(path, argv);
	fprintf(stderr, "mpkit bench: cannot run %s: %s\n", path, strerror(errno));
	return 1;
}

enum { WATCH_FAILED = CLI_EXEC_FAILED, WATCH_CANNOT_RUN = CLI_EXEC_CANNOT_RUN, WATCH_NOT_FOUND = CLI_EXEC_NOT_FOUND };

static void watch_usage(FILE *f)
{
	fprintf(f, "usage: MPKIT_WATCH=SPEC[,SPEC...] mpkit watch -- PROG [ARGS]\n"
		   "  SPEC: SYMBOL[:LEN] (a global in PROG's dynamic symbol table; LEN\n"
		   "        defaults to its size) or ADDR+LEN, either followed by /r to\n"
		   "        report reads too\n"
		   "  MPKIT_WATCH_OUT=FILE  reports go there (appended), not to stderr\n"
		   "  MPKIT_WATCH_LIB=PATH  the helper to preload, instead of libmpkit-watch.so\n"
		   "                        in mpkit's helpers' directory\n"
		   "PROG alone is watched: the programs it starts are not.\n"
		   "exit status: PROG's; %d no watch could be set as asked (a SPEC not\n"
		   "found or not watchable, no helper), %d PROG cannot run, %d PROG not\n"
		   "found, 2 usage\n",
		WATCH_FAILED, WATCH_CANNOT_RUN, WATCH_NOT_FOUND);
}

/*
 * `mpkit watch -- PROG ARGS`: PROG with libmpkit-watch.so preloaded
 * (tools/watch_preload.c), which sets the watches before PROG's main(),
 * ends PROG with WATCH_FAILED when one cannot be set, and takes itself out
 * of the environment PROG's children get.
 */
static int cmd_watch(char **argv)
{
	if (argv[1] && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		watch_usage(stdout);
		return cli_finish_output("watch", 0);
	}
	if (!argv[1] || strcmp(argv[1], "--") || !argv[2]) {
		watch_usage(stderr);
		return 2;
	}
	if (!getenv("MPKIT_WATCH"))
		fprintf(stderr, "mpkit watch: MPKIT_WATCH is not set: nothing is watched\n");
	return cli_exec_preloaded("watch", "MPKIT_WATCH_LIB", "libmpkit-watch.so", argv + 2);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return cli_finish_output("", 0);
	}
	if (!strcmp(argv[1], "--version")) {
		printf("mpkit %s\n", mpk_version());
		return cli_finish_output("", 0);
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
	if (!strcmp(argv[1], "run"))
		return cmd_run(argv + 1);
	if (!strcmp(argv[1], "symbolize"))
		return cmd_symbolize(argv + 1);
	fprintf(stderr, "mpkit: unknown command '%s' (try mpkit --help)\n", argv[1]);
	return 2;
}
