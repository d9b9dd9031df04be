/* SPDX-License-Identifier: MIT */
/*
 * `mpkit maps PID --json` names each domain of a running process with its
 * protection key: on hw the ProtectionKey the kernel reports is the key
 * mpk_domain_key() gives; on soft the domains are named all the same.  The
 * names come from [anon:mpk:NAME] where the kernel has them, else from the
 * library's registry page; both ways are taken here (the registry is the
 * only one on kernels without CONFIG_ANON_VMA_NAME).  A freed region leaves
 * the listing.  Text output too, and `mpkit maps self` of a process
 * without domains lists none.
 */

#include "t_cli.h"
#include "t_state.h"

static void check_named(const struct t_cli *r, const char *name, int key, int want)
{
	char needle[128];

	if (key >= 0)
		snprintf(needle, sizeof(needle), "\"pkey\": %d, \"domain\": \"%s\"", key, name);
	else
		snprintf(needle, sizeof(needle), "\"domain\": \"%s\"", name);
	if (!!strstr(r->out, needle) != want)
		t_fail("want %s%s in:\n%s", want ? "" : "no ", needle, r->out);
}

int main(void)
{
	char pid[16];
	struct t_cli r;

	int b = t_backend();
	/* The ptrace rules (Yama) let only ancestors read /proc/PID/mem. */
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());

	mpk_domain *a = mpk_domain_create("maps-alpha", MPK_RW, 0);
	mpk_domain *z = mpk_domain_create("maps-zulu", MPK_NONE, 0);
	REQUIRE(a && z);
	void *pa = mpk_alloc(a, 3 * t_page()), *pz = mpk_alloc(z, t_page());
	REQUIRE(pa && pz);
	int ka = b == MPK_BACKEND_HW ? mpk_domain_key(a) : -1;
	int kz = b == MPK_BACKEND_HW ? mpk_domain_key(z) : -1;
	if (b == MPK_BACKEND_HW)
		REQUIRE(ka > 0 && kz > 0 && ka != kz);

	t_cli_run(&r, NULL, (const char *[]){ "maps", pid, "--json", NULL });
	CHECK(r.status == 0);
	CHECK(strstr(r.out, "\"registry\": true") != NULL);
	check_named(&r, "maps-alpha", ka, 1);
	check_named(&r, "maps-zulu", kz, 1);
	char start[64];
	snprintf(start, sizeof(start), "\"start\": \"%p\"", pa);
	CHECK(strstr(r.out, start) != NULL);

	/* -J is --json; text names them too */
	t_cli_run(&r, NULL, (const char *[]){ "maps", pid, "-J", NULL });
	check_named(&r, "maps-alpha", ka, 1);
	t_cli_run(&r, NULL, (const char *[]){ "maps", pid, NULL });
	CHECK(r.status == 0 && strstr(r.out, "maps-zulu") && strstr(r.out, "maps-alpha"));

	/* gone once freed */
	REQUIRE(mpk_free(z, pz) == 0);
	t_cli_run(&r, NULL, (const char *[]){ "maps", pid, "--json", NULL });
	check_named(&r, "maps-zulu", -1, 0);
	check_named(&r, "maps-alpha", ka, 1);

	/* the mpkit process itself has no domains (under the drop-in, the
	 * command has its "malloc" and nothing else) */
	t_cli_run(&r, NULL, (const char *[]){ "maps", "self", "--json", NULL });
	if (t_dropin_loaded()) {
		CHECK(r.status == 0 && strstr(r.out, "\"domain\": \"malloc\""));
		CHECK(!strstr(r.out, "maps-"));
	} else {
		CHECK(r.status == 0 && strstr(r.out, "\"mappings\": [\n  ]"));
	}
	/* bad arguments */
	t_cli_run(&r, NULL, (const char *[]){ "maps", NULL });
	CHECK(r.status == 2);
	t_cli_run(&r, NULL, (const char *[]){ "maps", "12x", NULL });
	CHECK(r.status == 2);

	CHECK(mpk_domain_destroy(a) == 0 && mpk_domain_destroy(z) == 0);
	return t_done();
}
