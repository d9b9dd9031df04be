/* SPDX-License-Identifier: MIT */
/* Helpers the mpkit command's subcommands share, and the commands. */
#ifndef MPK_CLI_H
#define MPK_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/*
 * A command: `mpkit NAME ARGS`.  run gets argv[0] == NAME; its options
 * go through cli_getopt(), and `mpkit help NAME` is run with
 * { NAME, "--help" }.  A new command: a struct of these in its file, its
 * name below and a line in mpkit.c's commands[].
 */
struct cli_command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *synopsis; /* what follows "mpkit NAME" in the usage line */
	const char *summary;  /* one line for `mpkit --help` */
	const char *help;     /* the rest of `mpkit help NAME` */
};

extern const struct cli_command cli_info, cli_maps, cli_scan, cli_watch, cli_run, cli_guard, cli_bench, cli_symbolize;

/* `usage: mpkit NAME SYNOPSIS` and the help text, on f. */
void cli_usage(const struct cli_command *c, FILE *f);
/* --help: the usage on stdout, then 0 (1 when stdout failed). */
int cli_help(const struct cli_command *c);

/*
 * getopt_long() over a command's argv (argv[0]: its name), with mpkit's
 * messages; `--opt=value` and `--opt value` both work.  shortopts as
 * getopt's ("+" first: stop at the first operand, as run and watch do,
 * whose operands are a program and its arguments).  The option, -1 at the
 * end (optind: the first operand), or '?' after a message on stderr (an
 * unknown option or a missing value: exit 2).
 */
int cli_getopt(const struct cli_command *c, int argc, char **argv, const char *shortopts,
	       const struct option *longopts);
/* Two options that cannot go together: a message, and 2 to exit with. */
int cli_conflict(const struct cli_command *c, const char *a, const char *b);

/* Whether stdout reached its destination; when not (a full disk,
 * /dev/full, a closed pipe) a message on stderr and 0. */
int cli_output_ok(const char *cmd);

/* rc, or 1 when stdout could not be written: a write error is a failure
 * of the command. */
int cli_finish_output(const char *cmd, int rc);

/* The helpers' directory, relative to the one that holds mpkit
 * (tools/paths.c). */
extern const char cli_libexec[];
/* The documents' directory (tools/paths.c). */
extern const char cli_docdir[];
/* The helpers' directory, absolute, in buf (at least PATH_MAX bytes): as
 * this mpkit finds it, for its --help (tools/paths.c). */
const char *cli_helper_dir(char *buf, size_t size);

/* The path of the helper name (a benchmark, libmpkit-watch.so) in the
 * helpers' directory, in path: 0, or -1 with a message on stderr. */
int cli_helper(const char *cmd, const char *name, char *path, size_t size);

/* One line of report text (no newline) to out, a backtrace frame as its
 * function and FILE:LINE where the module's debug information has them
 * (symbolize.c); *fault_trace carries, from line to line, whether the
 * frames that follow start at a faulting instruction (false at first). */
void cli_symbolize_line(FILE *out, const char *line, bool *fault_trace);
/* After the last line: a note on stderr if addr2line could not run. */
void cli_symbolize_end(void);

/* A helper command's own failures (as env(1) and timeout(1) count): it
 * could not set up, PROG could not run, PROG was not found. */
enum { CLI_EXEC_FAILED = 125, CLI_EXEC_CANNOT_RUN = 126, CLI_EXEC_NOT_FOUND = 127 };
/* Exec argv with the helper library name (or the file the environment
 * variable var names) put first in LD_PRELOAD; returns only on failure,
 * with the exit status to give (run.c). */
int cli_exec_preloaded(const char *cmd, const char *var, const char *name, char **argv);

struct mpk_reg_header;
/* mpkit maps PID --check (maps_check.c): registry(pid) reads the
 * process's registry (NULL/errno, ENOENT: none). */
int maps_check(const char *pid, struct mpk_reg_header *(*registry)(const char *pid));

#endif
