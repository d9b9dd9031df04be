/* SPDX-License-Identifier: MIT */
/* For tests of the mpkit command: run it, collect what it prints. */
#ifndef MPK_TEST_CLI_H
#define MPK_TEST_CLI_H

#include <fcntl.h>
#include <sys/prctl.h>

#include "t.h"

struct t_cli {
	int status;      /* exit status, or 128 + signal */
	char out[65536]; /* stdout */
	char err[4096];  /* stderr */
};

/* The command: the build tree's ../mpkit (tests run from inside their
 * directory), else mpkit from PATH (the VM); skips when there is none. */
const char *t_cli_prog(void);

/*
 * Run `mpkit ARGS...` (NULL-terminated): the build tree's ../mpkit (tests
 * run from inside their directory), else mpkit from PATH (the VM).  stdout
 * goes to a pipe unless out_path names a file to open for it.
 */
void t_cli_run(struct t_cli *r, const char *out_path, const char *const *args);

/* How many times what occurs in s (not overlapping). */
int t_cli_count(const char *s, const char *what);

#endif
