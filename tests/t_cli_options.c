/* SPDX-License-Identifier: MIT */
/*
 * The mpkit command parses one way (getopt_long, tools/cli.c):
 *   - --opt=value as --opt value (scan --pid=PID), a value given to an
 *     option that takes none, or missing, is a usage error (2) saying so;
 *   - options may follow operands (maps PID --json);
 *   - `mpkit help CMD` and `mpkit CMD --help` print the command's usage;
 *     `mpkit help` the list of commands; an unknown one is 2;
 *   - `mpkit run PROG ARGS` runs PROG without "--", and what follows PROG
 *     is PROG's (run PROG --open gives PROG --open); `run -- PROG -x` too;
 *   - contradictory options are refused with exit 2 and a message naming
 *     both: run --sealed --open, maps --check --json, scan --pid and FILE.
 */
#include "t_cli.h"

static void status(const char *what, const struct t_cli *r, int want)
{
	if (r->status != want)
		t_fail("%s: exit %d, want %d (stdout: %.200s; stderr: %s)", what, r->status, want, r->out, r->err);
}

static void has(const char *what, const char *buf, const char *s)
{
	if (!strstr(buf, s))
		t_fail("%s: want \"%s\" in:\n%s", what, s, buf);
}

int main(void)
{
	static struct t_cli r;
	static char pid[32], arg[64], cwd[4096], lib[4200];

	t_cli_prog();
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	snprintf(arg, sizeof(arg), "--pid=%d", (int)getpid());

	/* --opt=value */
	t_cli_run(&r, NULL, (const char *[]){ "scan", arg, NULL });
	if (r.status != 0 && r.status != 1)
		t_fail("scan --pid=PID: exit %d (%s)", r.status, r.err);
	has("scan --pid=PID", r.out, "scanned:");
	t_cli_run(&r, NULL, (const char *[]){ "scan", "--json=yes", "x", NULL });
	status("scan --json=yes", &r, 2);
	has("scan --json=yes", r.err, "--json takes no value");
	t_cli_run(&r, NULL, (const char *[]){ "scan", "--pid", NULL });
	status("scan --pid", &r, 2);
	has("scan --pid", r.err, "--pid needs a value");
	t_cli_run(&r, NULL, (const char *[]){ "info", "--bogus", NULL });
	status("info --bogus", &r, 2);
	has("info --bogus", r.err, "unknown option '--bogus'");
	/* an option after the operand */
	t_cli_run(&r, NULL, (const char *[]){ "maps", pid, "-j", NULL });
	status("maps PID -j", &r, 0);
	has("maps PID -j", r.out, "\"mappings\"");

	/* help */
	t_cli_run(&r, NULL, (const char *[]){ "help", "run", NULL });
	status("help run", &r, 0);
	has("help run", r.out, "usage: mpkit run [--sealed|--open]");
	char run_help[sizeof(r.out)];
	snprintf(run_help, sizeof(run_help), "%s", r.out);
	t_cli_run(&r, NULL, (const char *[]){ "run", "--help", NULL });
	status("run --help", &r, 0);
	CHECK(!strcmp(r.out, run_help));
	const char *const cmds[] = { "info", "maps", "scan", "watch" };
	for (size_t i = 0; i < sizeof(cmds) / sizeof(*cmds); i++) {
		char want[64];
		snprintf(want, sizeof(want), "usage: mpkit %s ", cmds[i]);
		t_cli_run(&r, NULL, (const char *[]){ "help", cmds[i], NULL });
		status(cmds[i], &r, 0);
		has(cmds[i], r.out, want);
	}
	t_cli_run(&r, NULL, (const char *[]){ "help", NULL });
	status("help", &r, 0);
	has("help", r.out, "\n  run      ");
	t_cli_run(&r, NULL, (const char *[]){ "help", "nosuch", NULL });
	status("help nosuch", &r, 2);
	has("help nosuch", r.err, "unknown command 'nosuch'");

	/* contradictions */
	t_cli_run(&r, NULL, (const char *[]){ "run", "--sealed", "--open", "true", NULL });
	status("run --sealed --open", &r, 2);
	has("run --sealed --open", r.err, "--sealed and --open contradict");
	t_cli_run(&r, NULL, (const char *[]){ "maps", "self", "--check", "--json", NULL });
	status("maps --check --json", &r, 2);
	has("maps --check --json", r.err, "--check and --json contradict");
	t_cli_run(&r, NULL, (const char *[]){ "scan", "--pid", pid, "t_cli_options", NULL });
	status("scan --pid FILE", &r, 2);
	has("scan --pid FILE", r.err, "--pid and a FILE contradict");

	/* run PROG: the drop-in beside this test where there is one (the
	 * VM's mpkit has none beside it, and finds its own) */
	REQUIRE(getcwd(cwd, sizeof(cwd)));
	if (!access("./libmpkit-malloc.so", R_OK)) {
		snprintf(lib, sizeof(lib), "%s/libmpkit-malloc.so", cwd);
		REQUIRE(!setenv("MPKIT_MALLOC_LIB", lib, 1));
	}
	/* PROG: a dynamic program of the project's (the VM's sh and echo are
	 * static busybox, which mpkit run refuses) */
	static char prog[4200];
	snprintf(prog, sizeof(prog), "%s/malloc-args", cwd);
	t_cli_run(&r, NULL, (const char *[]){ "run", prog, "-e", "LD_PRELOAD", NULL });
	status("run PROG -e LD_PRELOAD", &r, 0);
	has("run PROG -e LD_PRELOAD", r.out, "libmpkit-malloc.so");
	t_cli_run(&r, NULL, (const char *[]){ "run", prog, "--open", "-x", NULL });
	status("run PROG --open -x", &r, 0);
	CHECK(!strcmp(r.out, "--open -x\n"));
	t_cli_run(&r, NULL, (const char *[]){ "run", "--open", "--", prog, "-x", NULL });
	status("run --open -- PROG -x", &r, 0);
	CHECK(!strcmp(r.out, "-x\n"));
	t_cli_run(&r, NULL, (const char *[]){ "run", "--sealed", prog, "-e", "MPKIT_HEAP_META", NULL });
	status("run --sealed PROG", &r, 0);
	CHECK(!strcmp(r.out, "closed\n"));
	/* a program of Debian's found on PATH (a drop-in built for another C
	 * library cannot go into glibc's programs) */
#ifdef __GLIBC__
	if (system("command -v python3 >/dev/null 2>&1") == 0) {
		t_cli_run(&r, NULL, (const char *[]){ "run", "python3", "-c", "print(6 * 7)", NULL });
		status("run python3", &r, 0);
		CHECK(!strcmp(r.out, "42\n"));
	}
#endif
	return t_done();
}
