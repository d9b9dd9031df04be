/* SPDX-License-Identifier: MIT */
/*
 * make install to a live system (issue 34, item 2), from the throwaway
 * installs the Makefile made under LIVE (no DESTDIR, PREFIX LIVE_PREFIX,
 * a stand-in ldconfig first on PATH that logs its runs):
 *   - where PREFIX/lib is a directory ldconfig looks at, install and
 *     uninstall ran ldconfig to rebuild its cache, and printed no hint;
 *   - where it is not, install left the cache alone and said how a
 *     program finds libmpkit.so.0 (-Wl,-rpath, LD_LIBRARY_PATH, ld.so.conf.d);
 *   - the installed man pages name this prefix's helpers and documents,
 *     never /usr/libexec/mpkit/ or /usr/share/doc/mpkit/;
 *   - pkg-config's helperdir is where libmpkit-malloc.so is;
 *   - the installed mpkit --help names the same directories.
 * Skips where the installs are not (the VM).
 */
#include <sys/stat.h>

#include "t_exec.h"

#ifndef LIVE
#error "LIVE: the directory of the live install test"
#endif

#define HELPERS LIVE_PREFIX "/libexec/mpkit"
#define DOCS LIVE_PREFIX "/share/doc/mpkit"

static char buf[1 << 17];

/* The file at path into buf (empty when it cannot be read). */
static const char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	buf[n] = 0;
	if (f)
		fclose(f);
	else
		t_fail("%s: %s", path, strerror(errno));
	return buf;
}

/* s as the man pages write it: each '-' as roff's \- (a static buffer). */
static const char *roff(const char *s)
{
	static char out[1024];
	char *o = out;

	for (; *s && o < out + sizeof(out) - 3; s++) {
		if (*s == '-')
			*o++ = '\\';
		*o++ = *s;
	}
	*o = 0;
	return out;
}

static void lacks(const char *what, const char *text, const char *bad)
{
	if (strstr(text, bad))
		t_fail("%s has \"%s\":\n%s", what, bad, text);
}

/* ldconfig ran (or not) to rebuild the cache: a run without -N. */
static void rebuilt(const char *name, int want)
{
	char path[256];
	snprintf(path, sizeof(path), LIVE "/%s.ldconfig", name);
	const char *log = slurp(path);
	/* The query comes first, always: the directories ldconfig reads. */
	CHECK_HAS(log, "ldconfig -v -N -X\n");
	int ran = strstr(log, "ldconfig \n") != NULL;
	if (ran != want)
		t_fail("%s: ldconfig %s, want %s; its runs:\n%s", name, ran ? "ran" : "did not run",
		       want ? "a run" : "none", log);
}

int main(void)
{
	struct stat st;

	if (stat(LIVE_PREFIX "/bin/mpkit", &st))
		t_skip("no live install at " LIVE " (make tests makes it; not in the VM)");

	/* PREFIX/lib among ldconfig's directories: the cache rebuilt, no hint. */
	rebuilt("seen", 1);
	lacks("install's output", slurp(LIVE "/seen.out"), "not a directory the dynamic linker searches");
	rebuilt("uninstall", 1);
	/* Not among them: no run, the hint instead. */
	rebuilt("unseen", 0);
	const char *out = slurp(LIVE "/unseen.out");
	CHECK_HAS(out, LIVE_PREFIX "/lib is not a directory the dynamic linker searches");
	CHECK_HAS(out, "-Wl,-rpath," LIVE_PREFIX "/lib");
	CHECK_HAS(out, "LD_LIBRARY_PATH=" LIVE_PREFIX "/lib");
	CHECK_HAS(out, "/etc/ld.so.conf.d/");

	/* Man pages: this prefix's paths, a '-' as roff's \-. */
	static const char *const pages[] = { "man1/mpkit.1", "man1/mpkit-run.1", "man1/mpkit-watch.1",
					     "man1/mpkit-bench.1", "man3/mpk_lockdown.3" };
	for (size_t i = 0; i < sizeof(pages) / sizeof(*pages); i++) {
		char path[512];
		snprintf(path, sizeof(path), LIVE_PREFIX "/share/man/%s", pages[i]);
		const char *text = slurp(path);
		lacks(pages[i], text, "/usr/libexec/mpkit");
		lacks(pages[i], text, "/usr/share/doc/mpkit");
		lacks(pages[i], text, "/usr/bin");
		lacks(pages[i], text, LIVE_PREFIX); /* its '-' unescaped */
	}
	char want[2048];
	const char *run = slurp(LIVE_PREFIX "/share/man/man1/mpkit-run.1");
	snprintf(want, sizeof(want), ".B LD_PRELOAD=%s/libmpkit\\-malloc.so\n", roff(HELPERS));
	CHECK_HAS(run, want);
	const char *top = slurp(LIVE_PREFIX "/share/man/man1/mpkit.1");
	snprintf(want, sizeof(want), ".I %s/\nThe helpers:", roff(HELPERS));
	CHECK_HAS(top, want);
	snprintf(want, sizeof(want), ".IR %s ),\n", roff(LIVE_PREFIX "/bin"));
	CHECK_HAS(top, want);
	snprintf(want, sizeof(want), ".I %s/\n", roff(DOCS));
	CHECK_HAS(top, want);

	/* pkg-config's helperdir: where the drop-in is. */
	char *pc_argv[] = { "pkg-config", "--variable=helperdir", "mpkit", NULL };
	char *pc_env[] = { "PKG_CONFIG_PATH=" LIVE_PREFIX "/lib/pkgconfig", NULL };
	int rc = t_exec_capture("/usr/bin/pkg-config", pc_argv, pc_env, 1, buf, sizeof(buf));
	if (!WIFEXITED(rc) || WEXITSTATUS(rc) || strcmp(buf, HELPERS "\n"))
		t_fail("pkg-config --variable=helperdir mpkit: status %#x, \"%s\", want " HELPERS, rc, buf);
	if (stat(HELPERS "/libmpkit-malloc.so", &st) || stat(HELPERS "/libmpkit-watch.so", &st))
		t_fail(HELPERS ": no libmpkit-malloc.so or libmpkit-watch.so: %s", strerror(errno));

	/* mpkit --help names the helpers and documents it has. */
	char *help_argv[] = { LIVE_PREFIX "/bin/mpkit", "--help", NULL };
	char *help_env[] = { "LD_LIBRARY_PATH", NULL };
	rc = t_exec_capture(help_argv[0], help_argv, help_env, 1, buf, sizeof(buf));
	if (!WIFEXITED(rc) || WEXITSTATUS(rc))
		t_fail("mpkit --help: status %#x:\n%s", rc, buf);
	CHECK_HAS(buf, "\nhelpers: " HELPERS "/ ");
	CHECK_HAS(buf, "\ndocuments: " DOCS "/ ");
	return t_done();
}
