/* SPDX-License-Identifier: MIT */
/*
 * `mpkit run [--sealed|--open] [--stats] [--wipe] [--] PROG ARGS`: PROG with
 * libmpkit-malloc.so preloaded (src/malloc/), every malloc() of it on an
 * mpkit heap; and the preload-and-exec step it shares with `mpkit watch`.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpkit.h"
#include "cli.h"

int cli_exec_preloaded(const char *cmd, const char *var, const char *name, char **argv)
{
	char path[PATH_MAX + 64], *preload = NULL;
	const char *lib = getenv(var), *old = getenv("LD_PRELOAD");

	if (!lib || !*lib) {
		if (cli_helper(cmd, name, path, sizeof(path)))
			return CLI_EXEC_FAILED;
		lib = path;
	} else if (access(lib, R_OK)) {
		fprintf(stderr, "mpkit %s: %s=%s: %s\n", cmd, var, lib, strerror(errno));
		return CLI_EXEC_FAILED;
	}
	if (strpbrk(lib, " :")) { /* LD_PRELOAD's separators */
		fprintf(stderr, "mpkit %s: %s: a path with a space or a colon cannot be preloaded\n", cmd, lib);
		return CLI_EXEC_FAILED;
	}
	if ((old && *old ? asprintf(&preload, "%s %s", lib, old) : asprintf(&preload, "%s", lib)) < 0) {
		fprintf(stderr, "mpkit %s: %s\n", cmd, strerror(ENOMEM));
		return CLI_EXEC_FAILED;
	}
	setenv("LD_PRELOAD", preload, 1);
	execvp(argv[0], argv);
	int err = errno;
	free(preload);
	fprintf(stderr, "mpkit %s: cannot run %s: %s\n", cmd, argv[0], strerror(err));
	return err == ENOENT || err == ENOTDIR ? CLI_EXEC_NOT_FOUND : CLI_EXEC_CANNOT_RUN;
}

static int cmd_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "sealed", no_argument, NULL, 's' },
		{ "open", no_argument, NULL, 'o' },
		{ "stats", no_argument, NULL, 'S' },
		{ "wipe", no_argument, NULL, 'W' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *meta = NULL;
	int o;

	/* "+": the first operand is PROG, and what follows it is PROG's */
	while ((o = cli_getopt(&cli_run, argc, argv, "+h", longopts)) != -1) {
		if (o == 'h')
			return cli_help(&cli_run);
		if (o == '?')
			return 2;
		if (o == 'S' || o == 'W') {
			setenv(o == 'S' ? "MPKIT_MALLOC_STATS" : "MPKIT_MALLOC_WIPE", "1", 1);
			continue;
		}
		const char *m = o == 's' ? "closed" : "open";
		if (meta && strcmp(meta, m))
			return cli_conflict(&cli_run, "--sealed", "--open");
		meta = m;
	}
	if (optind >= argc) {
		cli_usage(&cli_run, stderr);
		return 2;
	}
	if (meta)
		setenv("MPKIT_HEAP_META", meta, 1);
	/* What would make the drop-in fall back to its unprotected internal
	 * allocator in PROG (a bad MPKIT_* variable, hw asked for and
	 * missing) stops here instead. */
	if (mpk_init()) {
		fprintf(stderr, "mpkit run: mpkit cannot start: %s (mpkit info says why)\n", strerror(errno));
		return CLI_EXEC_FAILED;
	}
	return cli_exec_preloaded("run", "MPKIT_MALLOC_LIB", "libmpkit-malloc.so", argv + optind);
}

const struct cli_command cli_run = {
	"run", cmd_run, "[--sealed|--open] [--stats] [--wipe] [--] PROG [ARGS]",
	"PROG with its malloc() on an mpkit heap, the metadata closed between calls",
	"PROG's malloc(), free() and the rest of the C library's allocation calls\n"
	"(C++ new and delete too) go to an mpkit heap (libmpkit-malloc.so).  Options\n"
	"come before PROG: what follows PROG is PROG's own (-- is optional).\n"
	"  --sealed  the heap's metadata is closed between calls (MPKIT_HEAP_META=closed)\n"
	"  --open    it stays open (MPKIT_HEAP_META=open); not with --sealed\n"
	"  default   MPKIT_HEAP_META as set, else auto: sealed on hw, where an open\n"
	"            is 2 WRPKRU; open on soft, where each open is 2 mprotect()\n"
	"            calls (python3 ran many times slower sealed: mpkit-run(1))\n"
	"  --stats   at exit, PROG's calls and metadata opens per call on stderr\n"
	"            (MPKIT_MALLOC_STATS=1)\n"
	"  --wipe    free() zeroes each block (MPKIT_MALLOC_WIPE=1; not by default)\n"
	"  MPKIT_MALLOC_LIB=PATH  the library to preload, instead of libmpkit-malloc.so\n"
	"                         in mpkit's helpers' directory\n"
	"PROG's children inherit the preload (LD_PRELOAD).\n"
	"exit status: PROG's; 125 no library to preload or mpkit cannot start\n"
	"(a bad MPKIT_* variable), 126 PROG cannot run, 127 PROG not found, 2 usage\n",
};
