/* SPDX-License-Identifier: MIT */
/*
 * `mpkit bench malloc --smoke` on the two quickest workloads there are
 * (sqlite3, sort; skipped when neither is here): a correctness run, not
 * a timed one.  The table has both sections, a row per workload, the
 * glibc column and the geometric means, and no cell failed: each
 * allocator's output was glibc's.  Then a stand-in for the drop-in that
 * prints one line more (tests/helpers/bench_noise.c, MPKIT_MALLOC_LIB)
 * must turn every mpkit cell into an error naming the step whose output
 * differs, with exit status 1, while the other columns keep their
 * figures.  A smoke run gives no verdict against the targets.  A bad
 * option is a usage error; --opt=value and the old --rounds work.
 */
#include <limits.h>

#include "t_cli.h"

static const char *const args[] = { "bench", "malloc", "--smoke", "--quiet", "--workloads", NULL, NULL, NULL, NULL };

int main(void)
{
	static struct t_cli r;
	const char *const cand[] = { "sqlite", "sort" };
	const char *const need[] = { "sqlite3 -version", "sort --version | grep -q GNU" };
	char list[64] = "", cmd[128], noise[PATH_MAX];
	const char *a[sizeof(args) / sizeof(*args)];

	for (int i = 0; i < 2; i++) {
		snprintf(cmd, sizeof(cmd), "(%s) >/dev/null 2>&1", need[i]);
		if (!system(cmd))
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", *list ? "," : "", cand[i]);
	}
	if (!*list)
		t_skip("neither sqlite3 nor GNU sort is installed (tools/deps.sh test)");
#ifndef __GLIBC__
	/* The drop-in and its stand-in are built with this C library, and
	 * Debian's programs are glibc's: they cannot load them. */
	t_skip("a drop-in built for another C library than glibc does not go into Debian's programs");
#endif
	printf("workloads: %s\n", list);
	memcpy(a, args, sizeof(a));
	a[5] = list;

	unsetenv("MPKIT_MALLOC_LIB");
	/* By default, sealed is left out on soft (a debugging mode there),
	 * with the option that asks for it. */
	t_cli_run(&r, NULL, a);
	if (r.status == 1 && strstr(r.err, "not found"))
		t_skip("mpkit-bench-malloc is not next to mpkit here");
	CHECK(r.status == 0);
	if (mpk_backend() == MPK_BACKEND_SOFT)
		CHECK(strstr(r.out, "mpkit sealed  left out: soft backend") && strstr(r.out, "--allocators sealed runs it"));
	else
		CHECK(!strstr(r.out, "mpkit sealed  left out"));
	a[6] = "--allocators";
	a[7] = "jemalloc,mimalloc,sealed,open";
	t_cli_run(&r, NULL, a);
	printf("%s", r.out);
	CHECK(r.status == 0);
	CHECK(strstr(r.out, "SMOKE RUN") != NULL);
	CHECK(strstr(r.out, "\nwall time, median of 1") != NULL);
	CHECK(strstr(r.out, "\npeak RSS, median of 1") != NULL);
	CHECK(strstr(r.out, "  workload             glibc") != NULL);
	CHECK(strstr(r.out, "\n  geomean ") != NULL);
	/* No cell failed; an allocator that is not installed (jemalloc and
	 * mimalloc are outside tools/deps.sh's test group) is a column left
	 * out with the package to install, not ld.so's "ERROR:" line. */
	CHECK(strstr(r.out, "ERROR [") == NULL);
	for (const char *l = r.out, *nl; *l; l = *nl ? nl + 1 : nl) {
		char line[512];
		nl = l + strcspn(l, "\n");
		snprintf(line, sizeof(line), "%.*s", (int)(nl - l), l);
		if (!strstr(line, " left out: "))
			continue;
		if (strstr(line, "ERROR") || strstr(line, "ld.so"))
			t_fail("a left-out allocator quotes the dynamic linker: %s", line);
		if ((!strncmp(line, "  jemalloc ", 11) || !strncmp(line, "  mimalloc ", 11)) && !strstr(line, "install "))
			t_fail("a left-out allocator does not name its package: %s", line);
	}
	/* no verdict on timings it says mean nothing */
	CHECK(strstr(r.out, "targets: not judged") != NULL);
	CHECK(strstr(r.out, "MISSED") == NULL && strstr(r.out, ": met") == NULL);
	CHECK(strstr(r.out, "mpkit sealed  ") != NULL); /* the allocators' list */
	for (int i = 0; i < 2; i++) {
		snprintf(cmd, sizeof(cmd), "\n  %-8s ", cand[i]);
		if (strstr(list, cand[i]) && !strstr(r.out, cmd))
			t_fail("no row for %s", cand[i]);
	}
	/* The drop-in's columns ran, unless the output says why not. */
	if (!strstr(r.out, "mpkit sealed  left out"))
		CHECK(strstr(r.out, "     mpkit sealed        mpkit open\n") != NULL);

	/* A stand-in that changes the output. */
	REQUIRE(realpath("bench-noise.so", noise) != NULL);
	setenv("MPKIT_MALLOC_LIB", noise, 1);
	t_cli_run(&r, NULL, a);
	printf("%s", r.out);
	CHECK(r.status == 1);
	CHECK(strstr(r.out, noise) != NULL);
	CHECK(strstr(r.out, "ERROR [1]") != NULL);
	snprintf(cmd, sizeof(cmd), "] %s, mpkit sealed: round 1: the output of %s", strstr(list, "sqlite") ? "sqlite" : "sort",
		 strstr(list, "sqlite") ? "sqlite3 db < w.sql" : "sort --parallel=2");
	CHECK(strstr(r.out, cmd) != NULL);
	CHECK(strstr(r.out, "differs from glibc's") != NULL);
	CHECK(strstr(r.out, "jemalloc: round") == NULL && strstr(r.out, "glibc: round") == NULL);
	unsetenv("MPKIT_MALLOC_LIB");

	t_cli_run(&r, NULL, (const char *[]){ "bench", "malloc", "--reps=0", NULL });
	CHECK(r.status == 2 && strstr(r.err, "--reps wants a whole number from 1 to 100, not '0'") != NULL);
	t_cli_run(&r, NULL, (const char *[]){ "bench", "malloc", "--rounds", "0", NULL });
	CHECK(r.status == 2 && strstr(r.err, "--rounds wants") != NULL);
	t_cli_run(&r, NULL, (const char *[]){ "bench", "malloc", "--bogus", NULL });
	CHECK(r.status == 2 && strstr(r.err, "usage") != NULL);
	t_cli_run(&r, NULL, (const char *[]){ "bench", "malloc", "--help", NULL });
	CHECK(r.status == 0 && strstr(r.out, "usage: mpkit bench malloc") != NULL);
	return t_done();
}
