/* SPDX-License-Identifier: MIT */
/* Helpers the mpkit command's subcommands share. */
#ifndef MPK_CLI_H
#define MPK_CLI_H

/* --json and its aliases -J and -j. */
int cli_is_json_flag(const char *arg);

/* rc, or 1 when stdout could not be written (a full disk, /dev/full, a
 * closed pipe): a write error is a failure of the command. */
int cli_finish_output(const char *cmd, int rc);

/* s as a JSON string, quotes included, on stdout. */
void cli_json_str(const char *s);

int cmd_maps(int argc, char **argv);

struct mpk_reg_header;
/* mpkit maps PID --check (maps_check.c): registry(pid) reads the
 * process's registry (NULL/errno, ENOENT: none). */
int maps_check(const char *pid, struct mpk_reg_header *(*registry)(const char *pid));

#endif
