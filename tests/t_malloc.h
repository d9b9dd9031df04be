/* SPDX-License-Identifier: MIT */
/* For the drop-in allocator's tests: programs run with and without it. */
#ifndef MPK_TEST_MALLOC_H
#define MPK_TEST_MALLOC_H

#include "t.h"

/* libmpkit-malloc.so beside the test, as an absolute path; skips when
 * it is not there. */
const char *t_malloc_lib(void);

/* Run `/bin/sh -c script` with the "NAME=VALUE" entries of env
 * (NULL-terminated, or NULL) and, if preload, the drop-in preloaded: into
 * the shell and all it runs, or, with a C library other than glibc, into
 * the script's command alone (a simple command).  stdout and stderr into
 * out.  Returns the shell status (exit code, 128 + signal). */
int t_malloc_sh(const char *script, int preload, char *const *env, char *out, size_t cap);

/* The drop-in's MPKIT_MALLOC_STATS line of prog in out, printed, with
 * mode (e.g. "metadata closed") in it if mode is not NULL: its opens per
 * call, or -1 (and a failure) when there is none. */
double t_malloc_report(const char *what, const char *prog, const char *mode, const char *out);

#endif
