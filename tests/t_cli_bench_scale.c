/* SPDX-License-Identifier: MIT */
/*
 * `mpkit bench --scale --smoke`: the scale benchmark's correctness run
 * (every lookup, retried fault and restore checked inside) exits 0 and
 * prints every row side by side in one table: lookups and faults by
 * region count, no-change sets and broadcasts by thread count,
 * save + restore by domain count, the fast path's instruction counts.
 * An unknown argument is a usage error (2); --help says what it runs.
 * Never timed: the smoke run's figures are not checked.
 */
#include "t_cli.h"

int main(void)
{
	struct t_cli r;

	t_cli_run(&r, NULL, (const char *[]){ "bench", "--scale", "--smoke", NULL });
	if (r.status == 1 && strstr(r.err, "not found"))
		t_skip("mpkit-bench-scale is not next to mpkit here");
	CHECK(r.status == 0);
	if (r.status)
		fprintf(stderr, "stderr: %s\n", r.err);
	static const char *const rows[] = {
		"SMOKE RUN", "regions", "mpk_domain_of", "fault + retry", "threads",
		"no-change mpk_set", "broadcast, per thread", "signals per broadcast",
		"domains", "save + restore, <= 3 held", "save + restore, all held", "fast path",
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(*rows); i++)
		if (!strstr(r.out, rows[i]))
			t_fail("no '%s' in:\n%s", rows[i], r.out);
	CHECK(strstr(r.out, "1,000") && strstr(r.out, "8/1"));
	CHECK(strstr(r.err, "wrong") == NULL);

	t_cli_run(&r, NULL, (const char *[]){ "bench", "--scale", "--bogus", NULL });
	CHECK(r.status == 2 && strstr(r.err, "mpkit bench --scale: unknown option '--bogus'"));
	t_cli_run(&r, NULL, (const char *[]){ "bench", "--scale", "--help", NULL });
	CHECK(r.status == 0 && strstr(r.out, "usage: mpkit bench --scale") && strstr(r.out, "--smoke"));
	return t_done();
}
