/* SPDX-License-Identifier: MIT */
/*
 * `mpkit run` says what it cannot do (issue 34, item 4):
 *   - a program the preload cannot reach is refused (125, a line saying
 *     why) and does not run: statically linked (malloc-misuse-static; one
 *     with libmpkit-malloc.o linked in, malloc-stress-static, runs),
 *     setuid and setgid (a copy of malloc-misuse with the bit set), file
 *     capabilities (setcap, as root with libcap2-bin: else that part
 *     skips); the same copy without the bits runs;
 *   - a write past the end of a 200 KB block (a block of its own) is a
 *     report naming the block's region and its guard page, from the
 *     program's overflow(), not a bare SIGSEGV;
 *   - --stats: bytes live at exit, mapped at exit and at the peak; eight
 *     blocks of 1 MiB live at once make a peak of at least 8 MiB mapped,
 *     none live at exit.
 */
#include <sys/stat.h>

#include "t_cli.h"
#include "t_malloc.h"

static struct t_cli r;

static void refused(const char *prog, const char *why)
{
	const char *run[] = { "run", "--", prog, "stats", NULL };

	t_cli_run(&r, NULL, run);
	if (r.status != 125)
		t_fail("mpkit run %s: exit %d, want 125 (refused):\n%s", prog, r.status, r.err);
	if (!strstr(r.err, why) || !strstr(r.err, "unprotected"))
		t_fail("mpkit run %s: want \"%s\" and why it matters in:\n%s", prog, why, r.err);
	if (strstr(r.err, "libmpkit-malloc:"))
		t_fail("mpkit run %s: the program ran:\n%s", prog, r.err);
}

static void reach(void)
{
	char dir[] = "/tmp/t_run_limits.XXXXXX", copy[64], cmd[256];
	const char *run[] = { "run", "--", copy, "stats", NULL };

	if (!access("./malloc-misuse-static", X_OK))
		refused("./malloc-misuse-static", "statically linked");
	else
		printf("note: no malloc-misuse-static: the static case is not checked\n");
	/* A static program with the drop-in linked in is protected: it runs. */
	if (!access("./malloc-stress-static", X_OK)) {
		static const char *const ok[] = { "run", "--", "./malloc-stress-static", "small", NULL };
		t_cli_run(&r, NULL, ok);
		if (r.status != 0)
			t_fail("mpkit run malloc-stress-static (the drop-in inside): exit %d:\n%s", r.status, r.err);
	}
	REQUIRE(mkdtemp(dir));
	snprintf(copy, sizeof(copy), "%s/prog", dir);
	snprintf(cmd, sizeof(cmd), "cp ./malloc-misuse %s", copy);
	REQUIRE(system(cmd) == 0);
	t_cli_run(&r, NULL, run);
	if (r.status != 0)
		t_fail("mpkit run (plain copy): exit %d:\n%s", r.status, r.err);
	REQUIRE(chmod(copy, 04755) == 0);
	refused(copy, "setuid");
	REQUIRE(chmod(copy, 02755) == 0);
	refused(copy, "setgid");
	REQUIRE(chmod(copy, 0755) == 0);
	snprintf(cmd, sizeof(cmd), "setcap cap_net_raw+ep %s 2>/dev/null", copy);
	if (!system(cmd))
		refused(copy, "file capabilities");
	else
		printf("note: setcap failed (not root, no libcap2-bin, or a file system without xattrs): "
		       "the setcap case is not checked\n");
	unlink(copy);
	rmdir(dir);
}

static void big_overflow(void)
{
	static const char *const run[] = { "run", "--", "./malloc-misuse", "big-overflow", NULL };

	t_cli_run(&r, NULL, run);
	if (r.status != 128 + SIGABRT)
		t_fail("big-overflow: exit %d, want %d (a report, then abort):\n%s", r.status, 128 + SIGABRT,
		       r.err);
	const char *want[] = { "mpkit: protection fault: write of domain \"malloc\"",
			       " bytes past the end of region 0x", "in its guard page",
			       "mpkit:   backtrace, from the faulting instruction:\nmpkit:     #0 0x" };
	for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++)
		if (!strstr(r.err, want[i]))
			t_fail("big-overflow: want \"%s\" in:\n%s", want[i], r.err);
	const char *f0 = strstr(r.err, "#0 0x");
	if (f0 && !system("addr2line --version >/dev/null 2>&1") &&
	    strncmp(strstr(f0, " in ") ? strstr(f0, " in ") : "", " in overflow ", 13))
		t_fail("big-overflow: frame #0 is not the program's overflow():\n%s", r.err);
}

static void stats(void)
{
	static const char *const run[] = { "run", "--stats", "--", "./malloc-misuse", "stats", NULL };
	unsigned long live, mapped, peak;

	t_cli_run(&r, NULL, run);
	CHECK(r.status == 0);
	const char *l = strstr(r.err, "bytes: ");
	if (!l || sscanf(l, "bytes: %lu live at exit, %lu mapped at exit, %lu mapped at the peak", &live, &mapped,
			 &peak) != 3) {
		t_fail("--stats: no line of bytes:\n%s", r.err);
		return;
	}
	/* Eight 1 MiB blocks, each a region of its own, were live at once. */
	if (peak < 8ul << 20 || live >= 1ul << 20 || peak < mapped)
		t_fail("--stats: %lu live, %lu mapped, %lu at the peak: want a peak of at least 8 MiB, under "
		       "1 MiB live", live, mapped, peak);
}

int main(void)
{
	t_cli_prog();
	/* The drop-in beside the test (the VM's mpkit has none beside it). */
	REQUIRE(setenv("MPKIT_MALLOC_LIB", t_malloc_lib(), 1) == 0);
	if (access("./malloc-misuse", X_OK))
		t_skip("malloc-misuse is not beside the test (make tests)");
	reach();
	big_overflow();
	stats();
	return t_done();
}
