/* SPDX-License-Identifier: MIT */
/* The benchmarks' standard output reached its destination. */
#ifndef MPK_BENCH_OUTPUT_H
#define MPK_BENCH_OUTPUT_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* 1, or 0 with a message when stdout could not be written (a full disk,
 * /dev/full, a closed pipe): the run then fails, like any mpkit command. */
static inline int bench_output_ok(const char *prog)
{
	if (!fflush(stdout) && !ferror(stdout))
		return 1;
	fprintf(stderr, "%s: writing the output failed: %s\n", prog, strerror(errno ? errno : EIO));
	return 0;
}

#endif
