/* SPDX-License-Identifier: MIT */
#include "t_malloc.h"

const char *t_malloc_lib(void)
{
	static char lib[4200];
	char cwd[4096];

	if (access("./libmpkit-malloc.so", R_OK))
		t_skip("libmpkit-malloc.so is not beside the test (make tests)");
	REQUIRE(getcwd(cwd, sizeof(cwd)));
	snprintf(lib, sizeof(lib), "%s/libmpkit-malloc.so", cwd);
	return lib;
}

int t_malloc_sh(const char *script, int preload, char *const *env, char *out, size_t cap)
{
	static char pre[4300];
	char *envs[16];
	char *argv[] = { "sh", "-c", (char *)script, NULL };
	int n = 0;

	snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", t_malloc_lib());
#ifdef __GLIBC__
	envs[n++] = preload ? pre : "LD_PRELOAD";
#else
	/* The shell is the system's, built for glibc: the drop-in, built
	 * for this test's C library, goes to the script's command alone. */
	static char cmd[8500];
	envs[n++] = "LD_PRELOAD";
	if (preload) {
		snprintf(cmd, sizeof(cmd), "%s %s", pre, script);
		argv[2] = cmd;
	}
#endif
	for (; env && *env && n < 15; env++)
		envs[n++] = *env;
	envs[n] = NULL;
	struct t_exec x = { argv, envs, NULL, "/bin/sh" };
	struct t_child c = t_child(t_exec_main, &x, T_CHILD_STDOUT | T_CHILD_MERGED);
	snprintf(out, cap, "%s", c.out ? c.out : "");
	int st = t_child_shell_status(&c);
	t_child_free(&c);
	return st;
}

double t_malloc_report(const char *what, const char *prog, const char *mode, const char *out)
{
	char key[64];
	double opc = -1;

	snprintf(key, sizeof(key), "libmpkit-malloc: %s[", prog);
	const char *rep = strstr(out, key);
	if (!rep || (mode && !strstr(rep, mode)) || !strstr(rep, " calls, ")) {
		t_fail("%s: no report%s%s:\n%s", what, mode ? " of " : "", mode ? mode : "", out);
		return -1;
	}
	const char *o = strstr(rep, " opens, ");
	if (!o || sscanf(o + 8, "%lf opens per call", &opc) != 1)
		t_fail("%s: no opens per call in the report:\n%s", what, rep);
	/* "t_name: ...": the runner shows it under the PASS line (the VM's
	 * figures reach the log this way). */
	printf("%s: %s: %.*s\n", program_invocation_short_name, what, (int)strcspn(rep, "\n"), rep);
	return opc;
}
