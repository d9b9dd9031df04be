/* SPDX-License-Identifier: MIT */
/* Running a program of the build (an example, a tool) from a test. */
#ifndef MPK_TEST_EXEC_H
#define MPK_TEST_EXEC_H

#include "t.h"

/*
 * Run path with argv in a child, with env's "NAME=VALUE" entries set
 * ("NAME" alone: unset); its stdout, and stderr too if with_stderr, into
 * out (NUL-terminated).  Returns the wait status.
 */
int t_exec_capture(const char *path, char *const argv[], char *const env[], int with_stderr,
		   char *out, size_t cap);

#endif
