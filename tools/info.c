/* SPDX-License-Identifier: MIT */
/*
 * mpkit info [--json]: protection-key support of this CPU and kernel, the
 * backend mpkit would use, free keys, PKRU, and each MPKIT_* variable
 * judged by the library's own parser (src/shared/env.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "mpkit.h"
#include "env.h"
#include "json.h"
#include "cli.h"

static const char *yes(int v)
{
	return v ? "yes" : "no";
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
			mpk_json_str(stdout, mpk__env_name(v));
			printf(": { \"value\": ");
			mpk_json_str(stdout, val);
			printf(", \"valid\": %s, \"allowed\": ", ok ? "true" : "false");
			mpk_json_str(stdout, mpk__env_allowed(v));
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

/* A "name": value line of the JSON object, the last without a comma. */
static void jfield(const char *name, const char *str, int last)
{
	printf("  \"%s\": ", name);
	mpk_json_str(stdout, str);
	printf("%s\n", last ? "" : ",");
}

static void jflag(const char *name, int v)
{
	printf("  \"%s\": %s,\n", name, v ? "true" : "false");
}

static void print_json(const struct mpk_info *in, const char *kernel, const char *backend, const char *error)
{
	char pkru[16];

	snprintf(pkru, sizeof(pkru), "0x%08x", in->pkru);
	printf("{\n");
	jfield("version", mpk_version(), 0);
	jfield("kernel", kernel, 0);
	jflag("cpu_pku", in->cpu_pku);
	jflag("cpu_ospke", in->cpu_ospke);
	jflag("kernel_pkeys", in->kernel_pkeys);
	jfield("kernel_pkeys_why", pkeys_why(in), 0);
	jfield("backend", backend, 0);
	jflag("backend_forced", in->backend_forced);
	printf("  \"keys_free\": %d,\n  \"key_budget\": %d,\n", in->keys_free, in->key_budget);
	jflag("exec_only", in->exec_only);
	jfield("jit_code", in->backend == MPK_BACKEND_HW ? "key" : "mprotect", 0);
	jflag("region_names", in->region_names);
	jfield("region_names_why", naming_why(in), 0);
	jflag("secretmem", in->secretmem);
	jflag("secrets_kept_from_kernel", in->secretmem_vaults);
	jfield("secretmem_why", secretmem_why(in), 0);
	jfield("pkru", in->pkru_valid ? pkru : NULL, 0);
	printf("  \"environment\": {");
	env_report(1);
	printf("\n  },\n");
	if (error)
		jfield("error", error, 0);
	printf("  \"ok\": %s\n}\n", error ? "false" : "true");
}

static void print_text(const struct mpk_info *in, const char *kernel, const char *backend, const char *error)
{
	printf("mpkit %s on Linux %s\n", mpk_version(), kernel);
	printf("  CPU protection keys (PKU):   %s\n", yes(in->cpu_pku));
	printf("  enabled by the OS (OSPKE):   %s\n", yes(in->cpu_ospke));
	printf("  kernel pkey_alloc():         %s\n", pkeys_why(in));
	if (backend)
		printf("  backend:                     %s%s\n", backend,
		       in->backend_forced ? " (MPKIT_BACKEND)" : " (auto)");
	else
		printf("  backend:                     none: mpkit cannot start\n");
	printf("  keys free now:               %d\n", in->keys_free);
	printf("  key budget:                  %d\n", in->key_budget);
	printf("  execute-only memory:         %s\n", yes(in->exec_only));
	/* What mpk_code_alloc() gives: docs/code.md. */
	printf("  JIT code (mpk_code_alloc):   %s\n", in->backend == MPK_BACKEND_HW
	       ? "rwx, writable by the thread holding the window (key)"
	       : "mprotect flipping r-x <-> rw-, process-wide");
	printf("  region names in maps:        %s (%s)\n", yes(in->region_names), naming_why(in));
	printf("  secrets kept from kernel:    %s\n", secretmem_why(in));
	if (in->pkru_valid)
		printf("  PKRU of this thread:         0x%08x\n", in->pkru);
	printf("environment:\n");
	env_report(0);
	if (error)
		fprintf(stderr, "%s\n", error);
}

static int cmd_info(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct mpk_info in;
	struct utsname u;
	int json = 0, o;

	while ((o = cli_getopt(&cli_info, argc, argv, "jJh", longopts)) != -1) {
		if (o == 'h')
			return cli_help(&cli_info);
		if (o == '?')
			return 2;
		json = 1;
	}
	if (optind < argc) {
		fprintf(stderr, "mpkit info: unknown argument '%s'\n", argv[optind]);
		return 2;
	}
	int rc = mpk_info(&in);
	if (uname(&u))
		strcpy(u.release, "unknown");
	const char *backend = rc ? NULL : mpk_backend_name(in.backend);
	const char *error = rc ? (in.error ? in.error : strerror(errno)) : NULL;
	if (json)
		print_json(&in, u.release, backend, error);
	else
		print_text(&in, u.release, backend, error);
	return cli_finish_output("info", rc ? 1 : 0);
}

const struct cli_command cli_info = {
	"info", cmd_info, "[--json|-J|-j]",
	"protection-key support of this CPU and kernel, the backend, free keys, PKRU",
	"What this machine gives mpkit: the CPU's protection keys, the kernel's, the\n"
	"backend mpkit would pick, keys free, execute-only memory, region names,\n"
	"memfd_secret, this thread's PKRU, and each MPKIT_* variable as mpkit reads it.\n"
	"  -j, -J, --json  the same as one JSON object\n"
	"exit status: 0, 1 mpkit cannot start here (the reason on stderr), 2 usage\n",
};
