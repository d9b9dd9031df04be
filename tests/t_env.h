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
int t_cpu_flag(const char *word);

/* The CPU has keys and the kernel enabled them. */
int t_machine_has_keys(void);

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

/*
 * Initialisation failed with errno e, and every call that initialises
 * says so and does nothing; the choice is sticky even once the
 * environment is fixed.
 */
void t_check_init_fails(int e);

#endif
