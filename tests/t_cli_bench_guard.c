/* SPDX-License-Identifier: MIT */
/*
 * `mpkit bench guard --smoke` on its two quickest workloads that are
 * here (sqlite3 with libsqlite3, python3's bz2 with libbz2; skipped when
 * neither is): a correctness run, not a timed one.  The table has a row
 * per workload and backend with both times, the ratio, the calls through
 * the gate (MPKIT_GUARD_STATS) and those from outside, more than none of
 * either, the geometric mean, and says what a call costs on soft; no
 * cell failed, so every guarded output was the unguarded one.  Then a
 * helper that guards nothing (tests/helpers/bench_noise.c, which prints
 * a line more) must turn every guarded cell into an error saying the
 * library was not guarded, with exit status 1.  Bad options are usage
 * errors.
 */
#include <limits.h>

#include "t_cli.h"

int main(void)
{
	static struct t_cli r;
	const char *const cand[] = { "sqlite", "py-bz2" };
	const char *const need[] = { "sqlite3 -version", "python3 -c 'import bz2'" };
	char list[64] = "", cmd[128], noise[PATH_MAX];
	int n = 0;

	for (int i = 0; i < 2; i++) {
		snprintf(cmd, sizeof(cmd), "(%s) >/dev/null 2>&1", need[i]);
		if (!system(cmd))
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", n++ ? "," : "", cand[i]);
	}
	if (!n)
		t_skip("neither sqlite3 nor python3 with bz2 is installed (tools/deps.sh test)");
#ifndef __GLIBC__
	t_skip("the programs are Debian's, built for glibc: a helper built for another C library cannot load "
	       "into them");
#endif
	printf("workloads: %s\n", list);
	unsetenv("MPKIT_GUARD_HELPER");
	const char *a[] = { "bench", "guard", "--smoke", "--quiet", "--workloads", list, NULL };
	t_cli_run(&r, NULL, a);
	if (r.status == 1 && strstr(r.err, "not found"))
		t_skip("mpkit-bench-guard is not next to mpkit here");
	printf("%s%s", r.out, r.err);
	CHECK(r.status == 0);
	snprintf(cmd, sizeof(cmd), "mpkit bench guard: %d workload%s, 1 round interleaved", n, n > 1 ? "s" : "");
	CHECK(strstr(r.out, cmd) != NULL);
	CHECK(strstr(r.out, "SMOKE RUN") != NULL);
	CHECK(strstr(r.out, "a call from outside is 2 mprotect() system calls") != NULL);
	CHECK(strstr(r.out, "\n  workload   library    on   unguarded   guarded  ratio       calls    outside") != NULL);
	CHECK(strstr(r.out, "ERROR [") == NULL);
	int rows = 0;
	for (const char *l = r.out, *nl; *l; l = *nl ? nl + 1 : nl) {
		char w[32], lib[32], on[8], calls[32], out[32];
		double plain, guarded, ratio;
		nl = l + strcspn(l, "\n");
		if (sscanf(l, " %31s %31s %7s %lfs %lfs %lfx %31s %31s", w, lib, on, &plain, &guarded, &ratio, calls,
			   out) != 8)
			continue;
		rows++;
		if (!strstr(list, w) || (strcmp(on, "soft") && strcmp(on, "hw")))
			t_fail("a row for %s on %s", w, on);
		if (!(plain > 0 && guarded > 0 && ratio > 0) || atol(calls) <= 0 || atol(out) <= 0)
			t_fail("%s: no time or no call through the gate: %.*s", w, (int)(nl - l), l);
		if (!strcmp(w, "sqlite") && strcmp(lib, "libsqlite3"))
			t_fail("sqlite's library: %s", lib);
	}
	/* A row per workload on soft, and on hw where there are keys. */
	CHECK(rows == n * (1 + (mpk_backend() == MPK_BACKEND_HW)));
	CHECK(t_cli_count(r.out, "\n  geomean ") >= 1);

	/* A helper that guards nothing. */
	REQUIRE(realpath("bench-noise.so", noise) != NULL);
	setenv("MPKIT_GUARD_HELPER", noise, 1);
	t_cli_run(&r, NULL, a);
	printf("%s", r.out);
	CHECK(r.status == 1);
	CHECK(strstr(r.out, noise) != NULL);
	CHECK(strstr(r.out, "ERROR [1]") != NULL);
	CHECK(strstr(r.out, "was not guarded: no process wrote its counts") != NULL);
	CHECK(strstr(r.out, "unguarded: ") == NULL); /* the unguarded runs are fine */
	setenv("MPKIT_GUARD_HELPER", "/nonexistent/libmpkit-guard.so", 1);
	t_cli_run(&r, NULL, a);
	CHECK(r.status == 1 && strstr(r.err, "/nonexistent/libmpkit-guard.so: No such file") != NULL);
	unsetenv("MPKIT_GUARD_HELPER");

	t_cli_run(&r, NULL, (const char *[]){ "bench", "guard", "--reps=0", NULL });
	CHECK(r.status == 2 && strstr(r.err, "--reps wants a whole number from 1 to 100, not '0'") != NULL);
	t_cli_run(&r, NULL, (const char *[]){ "bench", "guard", "--workloads", "sqlite,nosuch", NULL });
	CHECK(r.status == 2 && strstr(r.err, "unknown name 'nosuch'") != NULL);
	t_cli_run(&r, NULL, (const char *[]){ "bench", "guard", "--help", NULL });
	CHECK(r.status == 0 && strstr(r.out, "usage: mpkit bench guard") != NULL);
	return t_done();
}
