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
void t_env_child(void (*fn)(void *), void *arg, const char *backend, const char *keys);
#define T_IN_CHILD(fn, arg, backend, keys) t_env_child((fn), (void *)(arg), (backend), (keys))

/*
 * Initialisation failed with errno e, and every call that initialises
 * says so and does nothing; the choice is sticky even once the
 * environment is fixed.
 */
void t_check_init_fails(int e);

#endif
