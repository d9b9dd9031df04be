/* SPDX-License-Identifier: MIT */
/*
 * mpkit: the command-line tool.  Exit codes: 0 ok, 1 failure, 2 usage.
 * Each command is a struct cli_command in its own file (cli.h); this file
 * dispatches through the table and answers --help, --version and help.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "mpkit.h"
#include "cli.h"

static int cmd_help(int argc, char **argv);

static const struct cli_command cli_help_cmd = {
	"help", cmd_help, "[COMMAND | bench NAME]", "this text, or a command's (as mpkit COMMAND --help)", ""
};

/* In the order `mpkit --help` lists them. */
static const struct cli_command *const commands[] = {
	&cli_info, &cli_maps, &cli_scan, &cli_watch, &cli_run, &cli_guard, &cli_symbolize, &cli_bench, &cli_help_cmd,
};

static const struct cli_command *find(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i]->name, name))
			return commands[i];
	return NULL;
}

static void usage(FILE *f)
{
	char helpers[PATH_MAX];

	fprintf(f, "usage: mpkit [--help] [--version] COMMAND [ARGS]\n"
		   "\ncommands (mpkit help COMMAND; man mpkit-COMMAND):\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-8s %s\n", commands[i]->name, commands[i]->summary);
	fprintf(f, "\n"
		   "environment:\n"
		   "  MPKIT_BACKEND=hw|soft|auto   backend choice (default auto)\n"
		   "  MPKIT_KEYS=N                 most hardware keys mpkit takes (1-15)\n"
		   "  MPKIT_HEAP_META=open|closed|auto  heap metadata closed between calls\n"
		   "  MPKIT_WATCH, MPKIT_WATCH_OUT, MPKIT_WATCH_LIB: mpkit help watch\n"
		   "  MPKIT_REPORT=fd:N|PATH        where reports go (default stderr; %%p: pid)\n"
		   "  MPKIT_MALLOC_STATS, MPKIT_MALLOC_DEBUG, MPKIT_MALLOC_LIB: mpkit help run\n"
		   "options take their value as --opt VALUE or --opt=VALUE.\n"
		   "  MPKIT_GUARD_HELPER, MPKIT_GUARD_VERBOSE: mpkit help guard\n"
		   "helpers: %s/ (libmpkit-malloc.so for LD_PRELOAD, libmpkit-watch.so, benchmarks)\n"
		   "documents: %s/ (guide.md first)\n",
		cli_helper_dir(helpers, sizeof(helpers)), cli_docdir);
}

static int unknown(const char *name)
{
	fprintf(stderr, "mpkit: unknown command '%s' (try mpkit --help)\n", name);
	return 2;
}

/* `mpkit help CMD`: `mpkit CMD --help`; `mpkit help bench NAME`: that
 * benchmark's (the other commands' operands are programs: not run). */
static int cmd_help(int argc, char **argv)
{
	char *args[4];
	int n = 0;

	if (argc < 2) {
		usage(stdout);
		return cli_finish_output("", 0);
	}
	const struct cli_command *c = find(argv[1]);
	if (!c)
		return unknown(argv[1]);
	if (c == &cli_help_cmd || argc > 3 || (argc > 2 && c != &cli_bench)) {
		cli_usage(&cli_help_cmd, c == &cli_help_cmd ? stdout : stderr);
		return c == &cli_help_cmd ? cli_finish_output("help", 0) : 2;
	}
	for (int i = 1; i < argc; i++)
		args[n++] = argv[i];
	args[n++] = "--help";
	args[n] = NULL;
	return c->run(n, args);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	static const struct cli_command top = { "", NULL, "[--help] [--version] COMMAND [ARGS]", "", "" };
	int o;

	while ((o = cli_getopt(&top, argc, argv, "+hV", longopts)) != -1) {
		if (o == 'h') {
			usage(stdout);
			return cli_finish_output("", 0);
		}
		if (o == 'V') {
			printf("mpkit %s\n", mpk_version());
			return cli_finish_output("", 0);
		}
		return 2;
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	const struct cli_command *c = find(argv[optind]);
	if (!c)
		return unknown(argv[optind]);
	argv += optind;
	argc -= optind;
	optind = 0; /* the command's getopt starts afresh */
	return c->run(argc, argv);
}
