/* SPDX-License-Identifier: MIT */
#include "t_env.h"

struct t_env_case {
	void (*fn)(void *);
	void *arg;
	const char *backend, *keys;
};

static void t_env_case_main(void *arg)
{
	const struct t_env_case *c = arg;
	t_setenv("MPKIT_BACKEND", c->backend);
	t_setenv("MPKIT_KEYS", c->keys);
	c->fn(c->arg);
}

void t_env_child(void (*fn)(void *), void *arg, const char *backend, const char *keys)
{
	struct t_env_case c = { fn, arg, backend, keys };
	struct t_child r = t_child(t_env_case_main, &c, T_CHILD_CHECKS);
	if (r.exit_code)
		t_fail("case MPKIT_BACKEND=%s MPKIT_KEYS=%s failed (status %#x)", t_show(backend),
		       t_show(keys), r.status);
}

int t_cpu_flag(const char *word)
{
	char line[4096];
	size_t n = strlen(word);
	int found = 0;
	FILE *f = fopen("/proc/cpuinfo", "r");

	REQUIRE(f);
	while (!found && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5))
			continue;
		for (char *p = strstr(line, word); p && !found; p = strstr(p + 1, word))
			found = p[-1] == ' ' && (p[n] == ' ' || p[n] == '\n');
		break; /* the first CPU says it */
	}
	fclose(f);
	return found;
}

int t_machine_has_keys(void)
{
	return t_cpu_flag("pku") && t_cpu_flag("ospke");
}

void t_check_init_fails(int e)
{
	struct mpk_info i;
	struct mpk_stats st;
	struct sigaction sa, before;
	int x;

	/* Whatever handles SIGSEGV now (a sanitizer may) must stay. */
	REQUIRE(sigaction(SIGSEGV, NULL, &before) == 0);
	CHECK_ERR(mpk_init(), e);
	CHECK_ERR(mpk_backend(), e);
	CHECK_ERR(mpk_domain_create("env", MPK_RW, 0), e);
	CHECK_ERR(mpk_set_key_budget(3), e);
	CHECK_ERR(mpk_fault_handler_install(NULL, NULL), e);
	REQUIRE(sigaction(SIGSEGV, NULL, &sa) == 0);
	CHECK(sa.sa_flags == before.sa_flags &&
	      (void *)sa.sa_sigaction == (void *)before.sa_sigaction);
	CHECK(mpk_domain_of(&x) == NULL);

	/* mpk_info still reports the machine, and what would run. */
	memset(&i, 0x7f, sizeof(i));
	CHECK_ERR(mpk_info(&i), e);
	CHECK(!i.cpu_ospke || i.cpu_pku);
	CHECK(!i.kernel_pkeys || i.cpu_ospke);
	CHECK(i.backend == (i.kernel_pkeys ? MPK_BACKEND_HW : MPK_BACKEND_SOFT));
	CHECK(i.domains == 0 && i.keys_in_use == 0);
	REQUIRE(mpk_stats_get(&st) == 0);
	CHECK(st.mprotect_calls == 0);

	/* Calls that need no backend still work. */
	CHECK(!strcmp(mpk_version(), MPK_VERSION_STRING));
	CHECK(mpk_backend_name(MPK_BACKEND_SOFT) != NULL);

	/* Sticky. */
	REQUIRE(setenv("MPKIT_BACKEND", "soft", 1) == 0);
	REQUIRE(unsetenv("MPKIT_KEYS") == 0);
	CHECK_ERR(mpk_init(), e);
	CHECK_ERR(mpk_domain_create("env", MPK_RW, 0), e);
}
