/* SPDX-License-Identifier: MIT */
/* `mpkit watch --syscalls` (watch_trace.c). */
#ifndef MPK_WATCH_TRACE_H
#define MPK_WATCH_TRACE_H

/* Run argv with the watch helper preloaded under ptrace, reporting every
 * system call of its threads that fails with EFAULT (to output, appended,
 * or stderr); returns PROG's exit status (as a shell counts a signal: it
 * is raised again first), or the CLI_EXEC_* status of a failure. */
int watch_traced(char **argv, const char *output);

#endif
