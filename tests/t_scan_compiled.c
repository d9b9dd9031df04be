/* SPDX-License-Identifier: MIT */
/*
 * The scan on real compiler output (tests/helpers/scan_case.c, built by the
 * Makefile into scan-cc/ next to this test with gcc and, when installed,
 * clang, at -O0 and -O2): _wrpkru(0), __builtin_ia32_wrpkru(0) and a
 * volatile zero, each a shared object, are gadgets as files; once
 * dlopen()ed in a child, the --pid scan finds the gadget in its mapping and
 * mpk_lockdown(MPK_LOCK_SCAN) refuses (EPERM, nothing applied).  A static
 * program calling pkey_set(1, 0) (the call is direct) makes glibc's
 * pkey_set a gadget in that file.  gcc -O0's _wrpkru(0) stores the zero to
 * the stack and loads it back; that was ROP only before stores were
 * followed.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <sys/prctl.h>

#include "t.h"
#include "scan.h"

struct find {
	const char *name; /* a path ending in this */
	int gadgets, sites;
	char sym[64];
};

static int on_gadget(const struct mpk_gadget *g, void *arg)
{
	struct find *f = arg;
	size_t n = strlen(g->where), k = strlen(f->name);
	if (n < k || strcmp(g->where + n - k, f->name))
		return 0;
	f->sites++;
	if (g->cls == MPK_SITE_GADGET) {
		f->gadgets++;
		snprintf(f->sym, sizeof(f->sym), "%s", g->sym ? g->sym : "?");
	}
	return 0;
}

static char dir[4096];

/* In a child: dlopen the case, scan this process, lock.  Bit 0: the scan
 * found the gadget in the case's mapping; bit 1: lockdown refused with
 * EPERM and nothing applied. */
static int in_child(void *arg)
{
	const char *name = arg;
	char path[8192];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!dlopen(path, RTLD_NOW | RTLD_LOCAL))
		return 100;
	struct find f = { .name = name };
	struct mpk_scan_cb cb = { on_gadget, NULL, &f };
	int r = 0;
	if (mpk__scan_pid(0, &cb) > 0 && f.gadgets > 0)
		r |= 1;
	if (mpk_lockdown(MPK_LOCK_SCAN | MPK_LOCK_ERRNO) == -1 && errno == EPERM &&
	    mpk_lockdown_flags() == -1)
		r |= 2;
	return r;
}

int main(void)
{
	ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 16);
	REQUIRE(n > 0);
	dir[n] = 0;
	snprintf(strrchr(dir, '/'), 16, "/scan-cc");
	DIR *d = opendir(dir);
	if (!d)
		t_skip("no scan-cc/ next to the test (make tests builds it)");
	int ncases = 0, clang = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *name = de->d_name;
		char path[8192];
		if (name[0] == '.' || !strcmp(name, "built"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		ncases++;
		clang += strstr(name, "-clang-") != NULL;
		struct find f = { .name = name };
		struct mpk_scan_cb cb = { on_gadget, NULL, &f };
		long g = mpk__scan_file(path, &cb);
		bool pkey = !strncmp(name, "pkeyset-", 8);
		if (g < 1 || !f.gadgets || strcmp(f.sym, pkey ? "pkey_set" : "scan_case"))
			t_fail("%s: as a file: %ld gadget(s) (%s), want one in %s", name, g, f.sym,
			       pkey ? "pkey_set" : "scan_case");
		if (pkey) {
			printf("%-22s file: gadget in %s\n", name, f.sym);
			continue;
		}
		int st = t_child_status(in_child, (void *)name);
		if (st != 3)
			t_fail("%s: in a process: %s%s (status %d)", name, st & 1 ? "" : "the --pid scan missed it; ",
			       st & 2 ? "" : "lockdown did not refuse", st);
		printf("%-22s file: gadget, --pid: %s, lockdown: %s\n", name, st & 1 ? "gadget" : "MISSED",
		       st & 2 ? "refused" : "LOCKED");
	}
	closedir(d);
	CHECK(ncases >= 8);
	if (!clang)
		printf("clang is not installed: its cases were not built, gcc's only\n");
	return t_done();
}
