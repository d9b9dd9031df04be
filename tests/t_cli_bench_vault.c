/* SPDX-License-Identifier: MIT */
/*
 * `mpkit bench vault --smoke`: a correctness run of the secrets benchmark
 * on the backend this machine has: every row is there, with figures or
 * with the reason it is missing (a library the build did not find), the
 * output says its timings mean nothing, and a bad option is a usage error.
 */
#include "t_cli.h"

int main(void)
{
	struct t_cli r;
	static const char *const rows[] = {
		"mpk_secret_alloc + _free, domain open", "mpk_secret_alloc + _free, closed",
		"sodium_malloc + sodium_free", "OPENSSL_secure_malloc + _free",
		"mpk_secret_readonly + mpk_secret_noaccess", "MPK_WITH(domain, MPK_READ)",
		"sodium_mprotect_readonly + _noaccess",
	};

	t_cli_run(&r, NULL, (const char *[]){ "bench", "vault", "--smoke", NULL });
	if (r.status == 1 && strstr(r.err, "not found"))
		t_skip("mpkit-bench-vault is not next to mpkit here");
	CHECK(r.status == 0);
	CHECK(strstr(r.out, "the timings mean nothing") != NULL);
	CHECK(strstr(r.out, "8 threads") != NULL);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (!strstr(r.out, rows[i]))
			t_fail("row '%s' missing in:\n%s", rows[i], r.out);
	t_cli_run(&r, NULL, (const char *[]){ "bench", "vault", "--bogus", NULL });
	CHECK(r.status == 2 && strstr(r.err, "usage") != NULL);
	return t_done();
}
