/* SPDX-License-Identifier: MIT */
/* Helpers the mpkit command's subcommands share. */
#ifndef MPK_CLI_H
#define MPK_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* --json and its aliases -J and -j. */
int cli_is_json_flag(const char *arg);

/* Whether stdout reached its destination; when not (a full disk,
 * /dev/full, a closed pipe) a message on stderr and 0. */
int cli_output_ok(const char *cmd);

/* rc, or 1 when stdout could not be written: a write error is a failure
 * of the command. */
int cli_finish_output(const char *cmd, int rc);

/* s as a JSON string, quotes included, on f (cli_json_str: stdout). */
void cli_json_fstr(FILE *f, const char *s);
void cli_json_str(const char *s);

/* The helpers' directory, relative to the one that holds mpkit
 * (tools/paths.c). */
extern const char cli_libexec[];
/* The documents' directory (tools/paths.c). */
extern const char cli_docdir[];

/* The path of the helper name (a benchmark, libmpkit-watch.so) in the
 * helpers' directory, in path: 0, or -1 with a message on stderr. */
int cli_helper(const char *cmd, const char *name, char *path, size_t size);

int cmd_maps(int argc, char **argv);
int cmd_run(char **argv);
int cmd_symbolize(char **argv);

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
