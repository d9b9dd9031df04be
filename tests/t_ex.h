/* SPDX-License-Identifier: MIT */
/*
 * Running the example programs from a test.  The build copies them into
 * TESTDIR/ex/ (so the VM harness, which packs TESTDIR, takes them along);
 * a test finds them next to itself and runs them as a user would, with
 * their output shown in its own.
 */
#ifndef MPK_TEST_EX_H
#define MPK_TEST_EX_H

#include "t.h"

#include <fcntl.h>
#include <limits.h>

/* TESTDIR/ex/NAME, or a skip when it was not built (e.g. no libsodium). */
const char *t_ex_path(const char *name);

/* A fresh temporary file's name (the file exists, empty). */
char *t_ex_tmp(const char *tag);

/* The whole of a file, NUL-terminated; its length in *len if not NULL. */
char *t_ex_slurp(const char *file, size_t *len);

/* Start argv with stdout and stderr to the files out and err (either
 * NULL: inherited); returns the pid. */
pid_t t_ex_spawn(char *const argv[], const char *out, const char *err);

/* Wait for pid; its exit status, or 128 + the signal that killed it. */
int t_ex_wait(pid_t pid);

/* Print a captured output, indented, so the test log tells the story;
 * past max lines, only how many more there were. */
void t_ex_show_some(const char *who, const char *text, int max);

void t_ex_show(const char *who, const char *text);

/* Run argv to the end; its status, its stdout in *out and, if err is not
 * NULL, its stderr in *err (malloc()ed; stderr is shown, at most 20 lines). */
int t_ex_run(char *const argv[], char **out, char **err);

#endif
