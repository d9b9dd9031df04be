/* SPDX-License-Identifier: MIT */
/*
 * Reports that point at the program (issue 34, item 3), through the
 * mpkit command and malloc-misuse (tests/helpers/malloc_misuse.c, -g):
 *   - `mpkit run -- malloc-misuse double-free`: death by SIGABRT; the
 *     report says "in free()", has one backtrace, and its frame #0 is the
 *     program's release() at malloc_misuse.c:LINE (no frame of mpkit's);
 *     a realloc() of a freed block says "in realloc()";
 *   - `--debug`: where the block was allocated (make()) and freed
 *     (release()), with their lines;
 *   - MPKIT_REPORT=PATH (%p): the report goes to PROG's own file,
 *     unsymbolized (module+offset), not to stderr; `mpkit symbolize FILE`
 *     names release() and its line;
 *   - MPKIT_REPORT=fd:N, the drop-in preloaded without mpkit run: the
 *     report on fd N, nothing of it on stderr;
 *   - bad values (fd:x, fd:, two %) stop `mpkit run` (125) with a line
 *     naming the variable, and `mpkit info` marks them INVALID;
 *   - a report made after `mpkit run` returned (a child left behind)
 *     reaches stderr;
 *   - `mpkit symbolize` exits 0 (--help), 1 (a file it cannot read), 2
 *     (an unknown option).
 * Lines need addr2line (binutils): without it, those checks skip.
 */
#include "t_cli.h"
#include "t_malloc.h"

static struct t_cli r;
static char out[65536];

static void has(const char *what, const char *buf, const char *s)
{
	if (!strstr(buf, s))
		t_fail("%s: want \"%s\" in:\n%s", what, s, buf);
}

static void lacks(const char *what, const char *buf, const char *s)
{
	if (strstr(buf, s))
		t_fail("%s: \"%s\" should not be in:\n%s", what, s, buf);
}

/* A frame of the program: its module (unsymbolized) or its source. */
static void program(const char *what, const char *line)
{
	if (!strstr(line, "/malloc-misuse+0x") && !strstr(line, "/malloc_misuse.c:"))
		t_fail("%s: not a frame of malloc-misuse: %s", what, line);
}

/* The line of frame #0 after the heading head, NUL-terminated in line. */
static void frame0(const char *what, const char *buf, const char *head, char *line, size_t size)
{
	const char *h = strstr(buf, head), *f = h ? strstr(h, "mpkit:     #0 ") : NULL;

	line[0] = 0;
	if (!f) {
		t_fail("%s: no frame #0 after \"%s\" in:\n%s", what, head, buf);
		return;
	}
	snprintf(line, size, "%.*s", (int)strcspn(f, "\n"), f);
}

static int count(const char *buf, const char *s)
{
	int n = 0;
	for (const char *p = buf; (p = strstr(p, s)); p++)
		n++;
	return n;
}

static void run_report(bool lines)
{
	char line[512];
	static const char *const df[] = { "run", "--", "./malloc-misuse", "double-free", NULL };

	t_cli_run(&r, NULL, df);
	if (r.status != 128 + SIGABRT)
		t_fail("run double-free: exit %d, want %d:\n%s", r.status, 128 + SIGABRT, r.err);
	has("run double-free", r.err, " in free() (heap ");
	lacks("run double-free", r.err, "mpk_heap_free");
	lacks("run double-free", r.err, "addr2line -f"); /* the old commands to run by hand */
	CHECK(count(r.err, "mpkit:   backtrace") == 1);
	CHECK(count(r.err, "mpkit:     #0 ") == 1);
	lacks("run double-free", r.err, "libmpkit");
	frame0("run double-free", r.err, "mpkit:   backtrace", line, sizeof(line));
	program("run double-free frame #0", line);
	if (lines) { /* without it, release() is named by nothing: it is static */
		has("run double-free frame #0", line, " in release ");
		has("run double-free frame #0", line, "/malloc_misuse.c:");
	}

	static const char *const rf[] = { "run", "--", "./malloc-misuse", "realloc-freed", NULL };
	t_cli_run(&r, NULL, rf);
	CHECK(r.status == 128 + SIGABRT);
	has("run realloc-freed", r.err, " in realloc() (heap ");
	frame0("run realloc-freed", r.err, "mpkit:   backtrace", line, sizeof(line));
	if (lines)
		has("run realloc-freed frame #0", line, " in main");

	static const char *const dbg[] = { "run", "--debug", "--", "./malloc-misuse", "double-free", NULL };
	t_cli_run(&r, NULL, dbg);
	CHECK(r.status == 128 + SIGABRT);
	frame0("run --debug", r.err, " was allocated", line, sizeof(line));
	program("run --debug allocation", line);
	if (lines)
		has("run --debug allocation", line, " in make ");
	frame0("run --debug", r.err, "mpkit:   and freed", line, sizeof(line));
	if (lines) {
		has("run --debug free", line, " in release ");
		has("run --debug free", line, "/malloc_misuse.c:");
	}
}

static void to_file(bool lines)
{
	char dir[] = "/tmp/t_run_report.XXXXXX", spec[64], path[128], line[512];

	REQUIRE(mkdtemp(dir));
	snprintf(spec, sizeof(spec), "%s/r.%%p.log", dir);
	REQUIRE(setenv("MPKIT_REPORT", spec, 1) == 0);
	static const char *const df[] = { "run", "--", "./malloc-misuse", "double-free", NULL };
	t_cli_run(&r, NULL, df);
	REQUIRE(unsetenv("MPKIT_REPORT") == 0);
	CHECK(r.status == 128 + SIGABRT);
	lacks("MPKIT_REPORT=PATH: stderr", r.err, "heap misuse");
	/* The file of the program's pid: the only one. */
	snprintf(path, sizeof(path), "ls %s/r.*.log", dir);
	FILE *ls = popen(path, "r");
	REQUIRE(ls);
	if (!fgets(path, sizeof(path), ls))
		path[0] = 0;
	pclose(ls);
	path[strcspn(path, "\n")] = 0;
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		t_fail("MPKIT_REPORT=%s: no report file", spec);
	} else {
		ssize_t n = read(fd, out, sizeof(out) - 1);
		out[n > 0 ? n : 0] = 0;
		close(fd);
		has("MPKIT_REPORT=PATH", out, "double free of");
		frame0("MPKIT_REPORT=PATH", out, "mpkit:   backtrace", line, sizeof(line));
		has("MPKIT_REPORT=PATH frame #0", line, "/malloc-misuse+0x");
		const char *sym[] = { "symbolize", path, NULL };
		t_cli_run(&r, NULL, sym);
		CHECK(r.status == 0);
		frame0("mpkit symbolize", r.out, "mpkit:   backtrace", line, sizeof(line));
		if (lines) {
			has("mpkit symbolize frame #0", line, " in release ");
			has("mpkit symbolize frame #0", line, "/malloc_misuse.c:");
		}
		unlink(path);
	}
	rmdir(dir);

	/* fd:N, preloaded by hand: the report on fd 9 only. */
	char *env[] = { "MPKIT_REPORT=fd:9", NULL };
	int st = t_malloc_sh("./malloc-misuse double-free 9>&1 2>/dev/null", 1, env, out, sizeof(out));
	CHECK(st == 128 + SIGABRT);
	has("MPKIT_REPORT=fd:9", out, "double free of");
	has("MPKIT_REPORT=fd:9", out, "mpkit:     #0 ");
	st = t_malloc_sh("./malloc-misuse double-free 9>/dev/null", 1, env, out, sizeof(out));
	CHECK(st == 128 + SIGABRT);
	lacks("MPKIT_REPORT=fd:9: stderr", out, "double free");
}

static void bad_values(void)
{
	static const char *const bad[] = { "fd:x", "fd:", "fd:-1", "/tmp/a%p%p", "/tmp/%s" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		char want[96];
		REQUIRE(setenv("MPKIT_REPORT", bad[i], 1) == 0);
		static const char *const run[] = { "run", "--", "./malloc-misuse", "stats", NULL };
		t_cli_run(&r, NULL, run);
		snprintf(want, sizeof(want), "MPKIT_REPORT=\"%s\" is not valid", bad[i]);
		if (r.status != 125)
			t_fail("MPKIT_REPORT=%s: mpkit run exit %d, want 125", bad[i], r.status);
		has("bad MPKIT_REPORT", r.err, want);
		static const char *const info[] = { "info", NULL };
		t_cli_run(&r, NULL, info);
		snprintf(want, sizeof(want), "\"%s\"  INVALID", bad[i]);
		has("mpkit info, bad MPKIT_REPORT", r.out, want);
	}
	REQUIRE(unsetenv("MPKIT_REPORT") == 0);
}

int main(void)
{
	t_cli_prog();
	/* The drop-in beside the test (the VM's mpkit has none beside it). */
	REQUIRE(setenv("MPKIT_MALLOC_LIB", t_malloc_lib(), 1) == 0);
	if (access("./malloc-misuse", X_OK))
		t_skip("malloc-misuse is not beside the test (make tests)");
	bool lines = !system("addr2line --version >/dev/null 2>&1");
	if (!lines)
		printf("note: addr2line (binutils) cannot run: FILE:LINE not checked\n");
	run_report(lines);
	to_file(lines);
	bad_values();
	/* A child PROG leaves behind reports after mpkit run stopped
	 * reading: on stderr (EPIPE on the socket, no SIGPIPE). */
	static const char *const late[] = { "run", "--", "./malloc-misuse", "late", NULL };
	t_cli_run(&r, NULL, late);
	CHECK(r.status == 0);
	has("a report after mpkit run stopped reading", r.err, "double free of");
	/* mpkit symbolize's own exits: --help 0, a file it cannot read 1,
	 * an unknown option 2. */
	static const char *const help[] = { "symbolize", "--help", NULL },
				 *const none[] = { "symbolize", "/nonexistent/report", NULL },
				 *const bogus[] = { "symbolize", "--bogus", NULL };
	t_cli_run(&r, NULL, help);
	CHECK(r.status == 0 && strstr(r.out, "usage: mpkit symbolize"));
	t_cli_run(&r, NULL, none);
	CHECK(r.status == 1 && strstr(r.err, "/nonexistent/report"));
	t_cli_run(&r, NULL, bogus);
	CHECK(r.status == 2);
	return t_done();
}
