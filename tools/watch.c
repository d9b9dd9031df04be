/* SPDX-License-Identifier: MIT */
/*
 * `mpkit watch [-w SPEC]... [-r SPEC]... [-o FILE] [-s] [--] PROG ARGS`:
 * PROG with libmpkit-watch.so preloaded (tools/watch_preload.c), which
 * takes the specs from MPKIT_WATCH (set here from -w/-r), sets the watches
 * before PROG's main(), ends PROG with 125 when one cannot be set, and
 * takes itself out of the environment PROG's children get.  Every SPEC is
 * checked here first: a bad one is a usage error, and PROG does not run.
 * -s runs PROG under ptrace instead (tools/watch_trace.c).
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "watch_spec.h"
#include "watch_trace.h"

/* Add the specs of arg (comma-separated) to the list in buf, each
 * checked, with /r when reads: 0, or -1 after saying why on stderr. */
static int watch_add(char *buf, size_t size, int *count, const char *arg, bool reads, const char *from)
{
	char copy[1024], *save = NULL;

	if (snprintf(copy, sizeof(copy), "%s", arg) >= (int)sizeof(copy)) {
		fprintf(stderr, "mpkit watch: %s is too long (1023 bytes at most)\n", from);
		return -1;
	}
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		struct watch_spec ws;
		const char *why;
		if (watch_spec_parse(t, &ws, &why)) {
			fprintf(stderr, "mpkit watch: bad SPEC '%s' in %s: %s (" WATCH_SPEC_SYNTAX ")\n", t, from, why);
			return -1;
		}
		if (++*count > 16) {
			fprintf(stderr, "mpkit watch: more than 16 SPECs\n");
			return -1;
		}
		size_t n = strlen(buf);
		if (snprintf(buf + n, size - n, "%s%s%s", n ? "," : "", t, reads && !ws.reads ? "/r" : "") >=
		    (int)(size - n)) {
			fprintf(stderr, "mpkit watch: the SPECs are too long together (1023 bytes at most)\n");
			return -1;
		}
	}
	if (!*count) {
		fprintf(stderr, "mpkit watch: no SPEC in %s '%s' (" WATCH_SPEC_SYNTAX ")\n", from, arg);
		return -1;
	}
	return 0;
}

static int cmd_watch(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "write", required_argument, NULL, 'w' },
		{ "read", required_argument, NULL, 'r' },
		{ "output", required_argument, NULL, 'o' },
		{ "syscalls", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char specs[1024] = "";
	const char *output = NULL;
	int count = 0, o;
	bool syscalls = false;

	/* "+": PROG's own options are PROG's. */
	while ((o = cli_getopt(&cli_watch, argc, argv, "+w:r:o:sh", longopts)) != -1) {
		switch (o) {
		case 'w':
		case 'r':
			if (watch_add(specs, sizeof(specs), &count, optarg, o == 'r', o == 'w' ? "-w" : "-r"))
				return 2;
			break;
		case 'o':
			output = optarg;
			break;
		case 's':
			syscalls = true;
			break;
		case 'h':
			return cli_help(&cli_watch);
		default:
			return 2;
		}
	}
	if (optind >= argc) {
		cli_usage(&cli_watch, stderr);
		return 2;
	}
	const char *env = getenv("MPKIT_WATCH");
	if (count) {
		if (env)
			fprintf(stderr, "mpkit watch: -w/-r given: MPKIT_WATCH from the environment is not used\n");
		setenv("MPKIT_WATCH", specs, 1);
	} else if (env && *env) {
		if (watch_add(specs, sizeof(specs), &count, env, false, "MPKIT_WATCH"))
			return 2;
	} else {
		fprintf(stderr, "mpkit watch: no -w, -r or MPKIT_WATCH: nothing is watched\n");
	}
	if (output)
		setenv("MPKIT_WATCH_OUT", output, 1);
	if (syscalls)
		return watch_traced(argv + optind, getenv("MPKIT_WATCH_OUT"));
	return cli_exec_preloaded("watch", "MPKIT_WATCH_LIB", "libmpkit-watch.so", argv + optind);
}

const struct cli_command cli_watch = {
	"watch", cmd_watch, "[-w SPEC]... [-r SPEC]... [-o FILE] [-s] [--] PROG [ARGS]",
	"PROG with watchpoints on its variables, each access reported with old and new bytes",
	"  -w, --write=SPEC   report every write to what SPEC names\n"
	"  -r, --read=SPEC    report reads of it too\n"
	"  -o, --output=FILE  reports go there (appended), not to stderr\n"
	"  -s, --syscalls     report system calls that fail with EFAULT (a watched\n"
	"                     page is closed to the kernel too): PROG runs under\n"
	"                     ptrace, each system call stops it twice\n"
	"  SPEC: SYMBOL[:LEN] (a global or static variable of PROG's .symtab,\n"
	"        or of any dynamic symbol table; LEN defaults to its size) or\n"
	"        ADDR+LEN; comma-separated, several at once (16 in all)\n"
	"Options come before PROG: what follows PROG is PROG's own.  Each report\n"
	"has the instruction, the bytes before and after the access, and a\n"
	"backtrace.  A system call that writes to a watched page fails with\n"
	"EFAULT, which only -s reports (docs/watch.md).\n"
	"environment (-w/-r/-o win over it):\n"
	"  MPKIT_WATCH=SPEC[,SPEC...]  what to watch; SPEC/r reports reads\n"
	"  MPKIT_WATCH_OUT=FILE  as -o\n"
	"  MPKIT_WATCH_LIB=PATH  the helper to preload, instead of libmpkit-watch.so\n"
	"                        in mpkit's helpers' directory\n"
	"PROG alone is watched: the programs it starts are not.\n"
	"exit status: PROG's; 125 no watch could be set as asked (a SPEC not\n"
	"found or not watchable, no helper), 126 PROG cannot run, 127 PROG not\n"
	"found, 2 usage (a bad SPEC)\n",
};
