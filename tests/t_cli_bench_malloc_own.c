/* SPDX-License-Identifier: MIT */
/*
 * `mpkit bench malloc`'s own workloads (bench/mw_*.c) and --count.
 * --smoke --workloads own runs the six under every allocator there is,
 * a row each, every output the same as glibc's; a stand-in for the
 * drop-in that prints a line more (tests/helpers/bench_noise.c) turns
 * its cell into an error naming the workload's program.  --count gives
 * a figure per allocator: with the stand-in (glibc's malloc beneath a
 * constructor) the drop-in's rows count exactly glibc's instructions,
 * with the real drop-in other ones; a bad workload name is a usage
 * error.
 */
#include <limits.h>

#include "t_cli.h"

static const char *const own[] = { "loop", "prodcons", "larson", "churn", "small", "large" };

/* The 32-byte figure of the --count row of allocator name, or -1. */
static double count_of(const char *out, const char *name)
{
	char key[64];
	double x;

	snprintf(key, sizeof(key), "\n  %-13s ", name);
	const char *p = strstr(out, key);
	return p && sscanf(p + strlen(key), "%lf", &x) == 1 ? x : -1;
}

int main(void)
{
	static struct t_cli r;
	char noise[PATH_MAX], row[64];

#ifndef __GLIBC__
	t_skip("a drop-in built for another C library than glibc does not go into Debian's programs");
#endif
	unsetenv("MPKIT_MALLOC_LIB");
	t_cli_run(&r, NULL, (const char *[]){ "bench", "malloc", "--smoke", "--quiet", "--workloads", "own", NULL });
	if (r.status == 1 && strstr(r.err, "not found"))
		t_skip("mpkit-bench-malloc is not next to mpkit here");
	printf("%s", r.out);
	if (strstr(r.out, "skipped loop:"))
		t_skip("the workloads are not built beside mpkit-bench-malloc here");
	CHECK(r.status == 0);
	CHECK(strstr(r.out, "mpkit bench malloc: 6 workloads,") != NULL);
	CHECK(strstr(r.out, "ERROR [") == NULL);
	for (size_t i = 0; i < sizeof(own) / sizeof(*own); i++) {
		snprintf(row, sizeof(row), "\n  %-8s ", own[i]);
		if (t_cli_count(r.out, row) != 3) /* the list, time and RSS */
			t_fail("not three lines for %s", own[i]);
	}
	CHECK(strstr(r.out, "python") == NULL && strstr(r.out, "sqlite") == NULL); /* "own" is only those */

	REQUIRE(realpath("bench-noise.so", noise) != NULL);
	setenv("MPKIT_MALLOC_LIB", noise, 1);
	t_cli_run(&r, NULL,
		  (const char *[]){ "bench", "malloc", "--smoke", "--quiet", "--workloads", "loop", "--allocators",
				    "open", NULL });
	printf("%s", r.out);
	CHECK(r.status == 1);
	CHECK(strstr(r.out, "] loop, mpkit open: round 1: the output of mpkit-bench-mw-loop differs from "
			    "glibc's") != NULL);

	t_cli_run(&r, NULL, (const char *[]){ "bench", "malloc", "--count", "--smoke", "--quiet", "--allocators", "open", NULL });
	printf("%s%s", r.out, r.err);
	if (strstr(r.out, "PTRACE_") || strstr(r.out, "ended early"))
		t_skip("no single-stepping here (ptrace refused)");
	CHECK(r.status == 0);
	double g = count_of(r.out, "glibc"), n = count_of(r.out, "mpkit open");
	CHECK(g > 10 && g < 2000);
	if (g != n)
		t_fail("glibc's malloc beneath a constructor counts %.1f, glibc's alone %.1f", n, g);
	unsetenv("MPKIT_MALLOC_LIB");

	t_cli_run(&r, NULL, (const char *[]){ "bench", "malloc", "--count", "--smoke", "--quiet", "--allocators", "open", NULL });
	printf("%s", r.out);
	CHECK(r.status == 0);
	g = count_of(r.out, "glibc"), n = count_of(r.out, "mpkit open");
	CHECK(g > 10 && n > 10 && n != g);

	t_cli_run(&r, NULL, (const char *[]){ "bench", "malloc", "--workloads", "loop,bogus", NULL });
	CHECK(r.status == 2 && strstr(r.err, "--workloads: unknown name 'bogus'") != NULL);
	return t_done();
}
