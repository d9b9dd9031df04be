/* SPDX-License-Identifier: MIT */
/*
 * `mpkit bench`: --json - writes the JSON on stdout (before: a file named
 * "-") with the table moved to stderr; -J is --json; an output that cannot
 * be written fails before the run (no table printed), not after it; a
 * write error on stdout is a failure.
 */
#include "t_cli.h"

int main(void)
{
	struct t_cli r;

	t_cli_run(&r, NULL, (const char *[]){ "bench", "--smoke", "--quiet", "--json", "/nonexistent/dir/r.json", NULL });
	if (r.status == 1 && strstr(r.err, "not found"))
		t_skip("mpkit-bench is not next to mpkit here");
	CHECK(r.status == 1);
	CHECK(strstr(r.err, "/nonexistent/dir/r.json: No such file or directory") != NULL);
	CHECK(r.out[0] == 0); /* nothing ran */
	t_cli_run(&r, NULL, (const char *[]){ "bench", "--smoke", "--quiet", "--plot", "/nonexistent/p.svg", NULL });
	CHECK(r.status == 1 && r.out[0] == 0 && strstr(r.err, "/nonexistent/p.svg"));

	const char *const flags[] = { "--json", "-J" };
	for (int i = 0; i < 2; i++) {
		REQUIRE(unlink("-") == 0 || errno == ENOENT);
		t_cli_run(&r, NULL, (const char *[]){ "bench", "--smoke", "--quiet", flags[i], "-", NULL });
		CHECK(r.status == 0);
		CHECK(r.out[0] == '{' && strstr(r.out, "\"smoke\": true"));
		CHECK(strstr(r.err, "SMOKE TEST") != NULL); /* the table */
		CHECK(access("-", F_OK) != 0);
	}
	if (access("/dev/full", W_OK) == 0) {
		t_cli_run(&r, "/dev/full", (const char *[]){ "bench", "--smoke", "--quiet", NULL });
		CHECK(r.status == 1 && strstr(r.err, "writing the output failed"));
	}
	return t_done();
}
