/* SPDX-License-Identifier: MIT */
/*
 * `mpkit info` names each bad variable with its value and what it takes
 * and exits 1 (before: "invalid MPKIT_BACKEND or MPKIT_KEYS", a backend
 * printed all the same, and MPKIT_HEAP_META=bogus passed); -J and -j are
 * --json; it says whether the kernel names regions; a write error (stdout
 * on /dev/full) is a failure, not exit 0.  Without pkey_alloc() it says
 * why, as mpk_info() sees this machine: the CPU lacks PKU, the kernel
 * lacks support, or keys are switched off (before: "no", whatever the
 * cause).
 */

#include "t_cli.h"

static void with_env(struct t_cli *r, const char *var, const char *val, const char *const *args)
{
	const char *old = getenv(var);
	char *keep = old ? strdup(old) : NULL;

	REQUIRE(setenv(var, val, 1) == 0);
	t_cli_run(r, NULL, args);
	if (keep)
		setenv(var, keep, 1);
	else
		unsetenv(var);
	free(keep);
}

int main(void)
{
	struct t_cli r;
	const char *const text[] = { "info", NULL }, *const json[] = { "info", "--json", NULL };

	t_cli_run(&r, NULL, text);
	CHECK(r.status == 0);
	CHECK(strstr(r.out, "region names in maps:") != NULL);
	CHECK(strstr(r.out, "MPKIT_HEAP_META") != NULL);
	struct mpk_info in;
	(void)mpk_info(&in);
	const char *why = in.kernel_pkeys ? "kernel pkey_alloc():         yes\n"
			  : !in.cpu_pku ? "kernel pkey_alloc():         no: this CPU has no protection keys (PKU)\n"
			  : in.cpu_ospke ? "kernel pkey_alloc():         no: the kernel lacks the pkey system calls"
					 : "kernel pkey_alloc():         no: ";
	if (!strstr(r.out, why))
		t_fail("mpkit info does not say \"%s\":\n%s", why, r.out);
	t_cli_run(&r, NULL, json);
	CHECK(strstr(r.out, in.kernel_pkeys ? "\"kernel_pkeys_why\": \"yes\"" : "\"kernel_pkeys_why\": \"no: ") != NULL);

	with_env(&r, "MPKIT_KEYS", "99", text);
	CHECK(r.status == 1);
	CHECK(strstr(r.out, "\"99\"  INVALID") != NULL);
	CHECK(strstr(r.out, "from 1 to 15") != NULL);
	CHECK(strstr(r.out, "backend:                     none") != NULL);
	CHECK(strstr(r.err, "MPKIT_KEYS=\"99\" is not valid") != NULL);

	with_env(&r, "MPKIT_HEAP_META", "bogus", json);
	CHECK(r.status == 1);
	CHECK(strstr(r.out, "\"MPKIT_HEAP_META\": { \"value\": \"bogus\", \"valid\": false") != NULL);
	CHECK(strstr(r.out, "\"ok\": false") != NULL);

	with_env(&r, "MPKIT_BACKEND", "bogus", text);
	CHECK(r.status == 1 && strstr(r.out, "\"bogus\"  INVALID"));

	const char *const aliases[] = { "-J", "-j" };
	for (int i = 0; i < 2; i++) {
		t_cli_run(&r, NULL, (const char *[]){ "info", aliases[i], NULL });
		CHECK(r.status == 0 && r.out[0] == '{' && strstr(r.out, "\"region_names\": "));
	}

	if (access("/dev/full", W_OK) == 0) {
		t_cli_run(&r, "/dev/full", text);
		CHECK(r.status == 1 && strstr(r.err, "writing the output failed"));
		t_cli_run(&r, "/dev/full", (const char *[]){ "maps", "self", NULL });
		CHECK(r.status == 1);
	}
	return t_done();
}
