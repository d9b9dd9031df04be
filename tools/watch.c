/* SPDX-License-Identifier: MIT */
/*
 * `mpkit watch [--] PROG ARGS`: PROG with libmpkit-watch.so preloaded
 * (tools/watch_preload.c), which sets the watches MPKIT_WATCH names before
 * PROG's main(), ends PROG with 125 when one cannot be set, and takes
 * itself out of the environment PROG's children get.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

static int cmd_watch(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int o;

	while ((o = cli_getopt(&cli_watch, argc, argv, "+h", longopts)) != -1) {
		if (o == 'h')
			return cli_help(&cli_watch);
		return 2;
	}
	if (optind >= argc) {
		cli_usage(&cli_watch, stderr);
		return 2;
	}
	if (!getenv("MPKIT_WATCH"))
		fprintf(stderr, "mpkit watch: MPKIT_WATCH is not set: nothing is watched\n");
	return cli_exec_preloaded("watch", "MPKIT_WATCH_LIB", "libmpkit-watch.so", argv + optind);
}

const struct cli_command cli_watch = {
	"watch", cmd_watch, "[--] PROG [ARGS]   (MPKIT_WATCH=SPEC[,SPEC...])",
	"PROG with watchpoints on what MPKIT_WATCH names, each access reported",
	"Each access to a watched range is reported with its instruction and a\n"
	"backtrace.  Options come before PROG: what follows PROG is PROG's own.\n"
	"  SPEC: SYMBOL[:LEN] (a global in PROG's dynamic symbol table; LEN\n"
	"        defaults to its size) or ADDR+LEN, either followed by /r to\n"
	"        report reads too\n"
	"  MPKIT_WATCH_OUT=FILE  reports go there (appended), not to stderr\n"
	"  MPKIT_WATCH_LIB=PATH  the helper to preload, instead of libmpkit-watch.so\n"
	"                        in mpkit's helpers' directory\n"
	"PROG alone is watched: the programs it starts are not.\n"
	"exit status: PROG's; 125 no watch could be set as asked (a SPEC not\n"
	"found or not watchable, no helper), 126 PROG cannot run, 127 PROG not\n"
	"found, 2 usage\n",
};
