/* SPDX-License-Identifier: MIT */
/* The lockdown give-back tests: a scenario per lockdown mode, each in a
 * child of its own (the filter is for good). */
#ifndef T_GIVEBACK_H
#define T_GIVEBACK_H

#include "t.h"

#include <stdbool.h>

/* Run scenario(flags, meta) in a child with its own count of failures:
 * true if it exited 0; a death (SIGSYS: the filter) or a failure is this
 * test's failure.  meta: MPKIT_HEAP_META for the child, NULL as chosen. */
bool t_giveback_child(void (*scenario)(unsigned flags, const char *meta), unsigned flags,
		      const char *meta);

/*
 * The scenario of t_lockdown_giveback_errno and _kill (kit/t_giveback.c
 * tells it): objects of every kind made before mpk_lockdown(flags) and
 * given back after it, round after round, with thread creation and the
 * program's own mappings; every call must work and the space mpkit keeps
 * reserved must not grow.
 */
void t_giveback_run(unsigned flags, const char *meta);

#endif
