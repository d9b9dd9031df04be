/* SPDX-License-Identifier: MIT */
/*
 * The mpkit command's exit statuses and output errors (issue 24, item 4):
 *   - `--help` on mpkit and on every command prints its usage on stdout,
 *     nothing on stderr, exit 0;
 *   - stdout on /dev/full: --help (mpkit's and each command's), --version,
 *     info, maps self and scan FILE fail with a message and exit nonzero;
 *   - `scan` of a file that is not ELF: its error, exit 2, and nothing on
 *     stdout (no "scanned:" line before the error);
 *   - `watch -- PROG`: 127 when PROG does not exist, 126 when it is not
 *     executable (as env(1) and timeout(1)); MPKIT_WATCH naming no symbol
 *     of PROG is an error (125) and PROG does not run.
 */
#include "t_cli.h"

static void has(const char *what, const char *buf, const char *s)
{
	if (!strstr(buf, s))
		t_fail("%s: want \"%s\" in:\n%s", what, s, buf);
}

static void status(const char *what, const struct t_cli *r, int want)
{
	if (r->status != want)
		t_fail("%s: exit %d, want %d (stderr: %s)", what, r->status, want, r->err);
}

static const char *const helps[][4] = {
	{ "--help" }, { "info", "--help" }, { "maps", "--help" }, { "scan", "--help" },
	{ "watch", "--help" }, { "run", "--help" }, { "bench", "--help" }, { "bench", "alloc", "--help" },
	{ "bench", "threads", "--help" }, { "bench", "--scale", "--help" },
};

int main(void)
{
	static struct t_cli r;
	static char cwd[4096], lib[4200];
	const char *self = "t_cli_exit"; /* this test's own ELF file */

	t_cli_prog(); /* skips without the command */
	for (size_t i = 0; i < sizeof(helps) / sizeof(*helps); i++) {
		const char *const *a = helps[i];
		char what[64];
		snprintf(what, sizeof(what), "%s %s %s", a[0], a[1] ? a[1] : "", a[1] && a[2] ? a[2] : "");
		t_cli_run(&r, NULL, a);
		/* The benchmarks may be absent (the VM packs mpkit-bench-scale only). */
		if (!strcmp(a[0], "bench") && r.status == 1 && strstr(r.err, "not found"))
			continue;
		status(what, &r, 0);
		has(what, r.out, "usage");
		if (r.err[0])
			t_fail("%s: stderr not empty: %s", what, r.err);
		t_cli_run(&r, "/dev/full", a);
		if (r.status == 0)
			t_fail("%s >/dev/full: exit 0", what);
		has(what, r.err, "writing the output failed");
	}

	const char *const *full[] = {
		(const char *[]){ "--version", NULL },
		(const char *[]){ "info", NULL },
		(const char *[]){ "info", "--json", NULL },
		(const char *[]){ "maps", "self", NULL },
		(const char *[]){ "scan", self, NULL },
		(const char *[]){ "scan", "--json", self, NULL },
	};
	for (size_t i = 0; i < sizeof(full) / sizeof(*full); i++) {
		t_cli_run(&r, NULL, full[i]);
		if (r.status != 0 || !r.out[0])
			t_fail("%s %s: exit %d, stdout \"%.40s\"", full[i][0], full[i][1] ? full[i][1] : "",
			       r.status, r.out);
		t_cli_run(&r, "/dev/full", full[i]);
		if (r.status == 0)
			t_fail("%s %s >/dev/full: exit 0", full[i][0], full[i][1] ? full[i][1] : "");
		has(full[i][0], r.err, "writing the output failed");
	}

	/* A file that is not ELF: the error alone. */
	const char *text = "t_cli_exit.txt";
	FILE *f = fopen(text, "w");
	REQUIRE(f && fputs("not an ELF file\n", f) >= 0 && !fclose(f));
	t_cli_run(&r, NULL, (const char *[]){ "scan", text, NULL });
	status("scan TEXT", &r, 2);
	if (r.out[0])
		t_fail("scan TEXT: stdout before the error: %s", r.out);
	has("scan TEXT", r.err, text);
	/* The helper beside this test, where there is one (the VM's mpkit has
	 * none beside it). */
	int have_helper = !access("./watch-target", X_OK) && !access("./libmpkit-watch.so", R_OK);
	REQUIRE(getcwd(cwd, sizeof(cwd)));
	snprintf(lib, sizeof(lib), "%s/libmpkit-watch.so", cwd);
	if (have_helper)
		REQUIRE(!setenv("MPKIT_WATCH_LIB", lib, 1));
	/* Not executable: 126. */
	t_cli_run(&r, NULL, (const char *[]){ "watch", "--", "./t_cli_exit.txt", NULL });
	status("watch -- TEXT", &r, 126);
	unlink(text);
	t_cli_run(&r, NULL, (const char *[]){ "watch", "--", "/nonexistent/prog", NULL });
	status("watch -- /nonexistent/prog", &r, 127);
	t_cli_run(&r, NULL, (const char *[]){ "watch", "--", "no-such-program-in-path", NULL });
	status("watch -- no-such-program-in-path", &r, 127);

	/* mpkit run: the same statuses, and a bad option is usage.  The
	 * drop-in beside this test where there is one (the VM's mpkit has
	 * none beside it: without one it is 125, before PROG is looked for). */
	if (!access("./libmpkit-malloc.so", R_OK)) {
		snprintf(lib, sizeof(lib), "%s/libmpkit-malloc.so", cwd);
		REQUIRE(!setenv("MPKIT_MALLOC_LIB", lib, 1));
	}
	t_cli_run(&r, NULL, (const char *[]){ "run", "--", "/nonexistent/prog", NULL });
	status("run -- /nonexistent/prog", &r, 127);
	t_cli_run(&r, NULL, (const char *[]){ "run", "--bogus", "--", "true", NULL });
	status("run --bogus", &r, 2);
	t_cli_run(&r, NULL, (const char *[]){ "run", "--", NULL });
	status("run --", &r, 2);

	/* A symbol PROG does not have: an error, and PROG does not run. */
	if (!have_helper)
		t_skip("watch-target or libmpkit-watch.so missing (make tests)");
	REQUIRE(!setenv("MPKIT_WATCH", "nosuchsym", 1));
	t_cli_run(&r, NULL, (const char *[]){ "watch", "--", "./watch-target", NULL });
	status("MPKIT_WATCH=nosuchsym", &r, 125);
	has("MPKIT_WATCH=nosuchsym", r.err, "nosuchsym");
	if (r.out[0])
		t_fail("MPKIT_WATCH=nosuchsym: the program ran: %s", r.out);
	/* The same run with a symbol it has: it runs, exit 0. */
	REQUIRE(!setenv("MPKIT_WATCH", "counter", 1));
	t_cli_run(&r, NULL, (const char *[]){ "watch", "--", "./watch-target", NULL });
	status("MPKIT_WATCH=counter", &r, 0);
	has("MPKIT_WATCH=counter", r.out, "counter=5 neighbour=3");
	return t_done();
}
