/* SPDX-License-Identifier: MIT */
/*
 * `mpkit run [--sealed|--open] [--stats] [--wipe] -- PROG ARGS`: PROG with
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

static void run_usage(FILE *f)
{
	fprintf(f, "usage: mpkit run [--sealed|--open] [--stats] [--wipe] -- PROG [ARGS]\n"
		   "PROG's malloc(), free() and the rest of the C library's allocation calls\n"
		   "(C++ new and delete too) go to an mpkit heap (libmpkit-malloc.so).\n"
		   "  --sealed  the heap's metadata is closed between calls (MPKIT_HEAP_META=closed)\n"
		   "  --open    it stays open (MPKIT_HEAP_META=open)\n"
		   "  default   MPKIT_HEAP_META as set, else auto: sealed on hw, where an open\n"
		   "            is 2 WRPKRU; open on soft, where each open is 2 mprotect()\n"
		   "            calls (python3 ran many times slower sealed: mpkit-run(1))\n"
		   "  --stats   at exit, PROG's calls and metadata opens per call on stderr\n"
		   "            (MPKIT_MALLOC_STATS=1)\n"
		   "  --wipe    free() zeroes each block (MPKIT_MALLOC_WIPE=1; not by default)\n"
		   "  MPKIT_MALLOC_LIB=PATH  the library to preload, instead of libmpkit-malloc.so\n"
		   "                         in mpkit's helpers' directory\n"
		   "PROG's children inherit the preload (LD_PRELOAD).\n"
		   "exit status: PROG's; %d no library to preload or mpkit cannot start\n"
		   "(a bad MPKIT_* variable), %d PROG cannot run,\n"
		   "%d PROG not found, 2 usage\n",
		CLI_EXEC_FAILED, CLI_EXEC_CANNOT_RUN, CLI_EXEC_NOT_FOUND);
}

int cmd_run(char **argv)
{
	int i = 1;

	if (argv[1] && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		run_usage(stdout);
		return cli_finish_output("run", 0);
	}
	for (; argv[i] && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "--sealed")) {
			setenv("MPKIT_HEAP_META", "closed", 1);
		} else if (!strcmp(argv[i], "--open")) {
			setenv("MPKIT_HEAP_META", "open", 1);
		} else if (!strcmp(argv[i], "--stats")) {
			setenv("MPKIT_MALLOC_STATS", "1", 1);
		} else if (!strcmp(argv[i], "--wipe")) {
			setenv("MPKIT_MALLOC_WIPE", "1", 1);
		} else {
			fprintf(stderr, "mpkit run: unknown option '%s'\n", argv[i]);
			run_usage(stderr);
			return 2;
		}
	}
	if (!argv[i] || !argv[i + 1]) {
		run_usage(stderr);
		return 2;
	}
	/* What would make the drop-in fall back to its unprotected internal
	 * allocator in PROG (a bad MPKIT_* variable, hw asked for and
	 * missing) stops here instead. */
	if (mpk_init()) {
		fprintf(stderr, "mpkit run: mpkit cannot start: %s (mpkit info says why)\n", strerror(errno));
		return CLI_EXEC_FAILED;
	}
	return cli_exec_preloaded("run", "MPKIT_MALLOC_LIB", "libmpkit-malloc.so", argv + i + 1);
}
