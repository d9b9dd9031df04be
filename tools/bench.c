/* SPDX-License-Identifier: MIT */
/*
 * `mpkit bench [alloc|vault|threads|malloc|guard|--scale] [OPTIONS]`.  The
 * benchmarks are programs of their own: they link libsodium for their
 * comparison rows, which the mpkit command and the library do not need,
 * and they fork a process per backend.  This runs mpkit-bench[-alloc|
 * -vault|-threads|-malloc|-guard|-scale], found in the helpers' directory
 * (tools/paths.c), which parses the options (bench/options.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char *const which[][2] = {
	{ "alloc", "mpkit-bench-alloc" },
	{ "vault", "mpkit-bench-vault" },
	{ "threads", "mpkit-bench-threads" },
	{ "malloc", "mpkit-bench-malloc" },
	{ "guard", "mpkit-bench-guard" },
	{ "--scale", "mpkit-bench-scale" }, /* the program behind make bench-scale */
};

static int cmd_bench(int argc, char **argv)
{
	char path[PATH_MAX + 64];
	const char *prog = "mpkit-bench";

	(void)argc;
	for (size_t i = 0; argv[1] && i < sizeof(which) / sizeof(which[0]); i++)
		if (!strcmp(argv[1], which[i][0])) {
			prog = which[i][1];
			argv++;
			break;
		}
	/* The main one's help after the list of the others. */
	if (!strcmp(prog, "mpkit-bench") && argv[1] && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		cli_usage(&cli_bench, stdout);
		printf("\n");
		if (!cli_output_ok("bench"))
			return 1;
	}
	if (cli_helper("bench", prog, path, sizeof(path)))
		return 1;
	setenv("MPKIT_BENCH_PROG", "mpkit bench", 1);
	argv[0] = path;
	execv(path, argv);
	fprintf(stderr, "mpkit bench: cannot run %s: %s\n", path, strerror(errno));
	return 1;
}

const struct cli_command cli_bench = {
	"bench", cmd_bench, "[alloc|vault|threads|malloc|guard|--scale] [OPTIONS]",
	"what keys buy over mprotect(), and mpkit's heaps against others, measured",
	"  bench           a table of domain switch, mprotect, THP and libsodium\n"
	"                  costs by region size and thread count (its options below)\n"
	"  bench alloc     heaps against malloc, vaults against libsodium\n"
	"  bench vault     secrets in 1-8 threads against libsodium and OpenSSL\n"
	"  bench threads   rights changes for one thread and all, against mprotect\n"
	"  bench malloc    real programs (python3, sqlite3, git, gcc, xz, zstd, sort)\n"
	"                  and six of its own (a malloc/free loop, producer/consumer,\n"
	"                  larson, thread churn, small and large blocks) under glibc,\n"
	"                  jemalloc, mimalloc and mpkit run's allocator, sealed and\n"
	"                  open: time and peak RSS against glibc; --count: the\n"
	"                  instructions of a cached block's malloc+free\n"
	"  bench guard     real programs (sqlite3, xmllint, git, openssl, python3)\n"
	"                  with a library guarded (mpkit guard) against unguarded:\n"
	"                  time ratios and calls through the gate, on each backend\n"
	"  bench --scale   lookups and faults at 10..100,000 regions, no-change sets at\n"
	"                  1..8 threads, save/restore at 1..1,000 domains, broadcasts\n"
	"Every one takes --smoke (a correctness run: no figure means anything, no\n"
	"verdict), --quiet (no progress on stderr) and --help; --reps N where it\n"
	"repeats (mpkit help bench NAME).  Ctrl-C stops a run and cleans up (exit 130).\n",
};
