/* SPDX-License-Identifier: MIT */
/*
 * For tests of the environment variables mpkit reads at initialisation.
 * The choice is sticky per process, so each case runs in a fresh child:
 * the parent makes no mpkit call before forking.
 */
#ifndef MPK_TEST_ENV_H
#define MPK_TEST_ENV_H

#include "t.h"

/* Whether /proc/cpuinfo lists flag word as a CPU flag (mpkit not asked). */
static inline int t_cpu_flag(const char *word)
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

/* The CPU has keys and the kernel enabled them. */
static inline int t_machine_has_keys(void)
{
	return t_cpu_flag("pku") && t_cpu_flag("ospke");
}

/*
 * Run fn(arg) in a child with MPKIT_BACKEND and MPKIT_KEYS set as given
 * (NULL: unset).  The child's CHECK failures make it exit 1; the parent
 * records a failure naming the case.
 */
#define T_IN_CHILD(fn, arg, backend, keys)                                   \
	do {                                                                 \
		int t_st_;                                                   \
		fflush(NULL);                                                \
		pid_t t_pid_ = fork();                                       \
		REQUIRE(t_pid_ >= 0);                                        \
		if (t_pid_ == 0) {                                           \
			t_setenv("MPKIT_BACKEND", backend);                  \
			t_setenv("MPKIT_KEYS", keys);                        \
			fn(arg);                                             \
			fflush(NULL);                                        \
			_exit(t_failures ? 1 : 0);                           \
		}                                                            \
		REQUIRE(waitpid(t_pid_, &t_st_, 0) == t_pid_);               \
		if (!WIFEXITED(t_st_) || WEXITSTATUS(t_st_))                 \
			t_fail("case MPKIT_BACKEND=%s MPKIT_KEYS=%s failed "  \
			       "(status %#x)", t_show(backend), t_show(keys), \
			       t_st_);                                       \
	} while (0)

static inline void t_setenv(const char *name, const char *value)
{
	if (value)
		REQUIRE(setenv(name, value, 1) == 0);
	else
		REQUIRE(unsetenv(name) == 0);
}

static inline const char *t_show(const char *v)
{
	return v ? v : "(unset)";
}

/*
 * Initialisation failed with errno e, and every call that initialises
 * says so and does nothing; the choice is sticky even once the
 * environment is fixed.
 */
static inline void t_check_init_fails(int e)
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

#endif
