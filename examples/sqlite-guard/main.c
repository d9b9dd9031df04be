/* SPDX-License-Identifier: MIT */
/*
 * sqlite-guard: a workload on SQLite while the application fires wild
 * writes into SQLite's memory.  See docs/examples.md.
 *
 *	sqlite-guard [--no-guard] [--ops N] [--writes N] [--seed S]
 *
 * Guarded (the default), SQLite's memory is an mpk_heap in domain "sqlite",
 * writable only inside sqlite3_* calls: every wild write faults, is
 * counted and skipped, and the database stays whole.  --no-guard: the same
 * allocations from malloc(), the same writes land.  The workload runs in a
 * child, so that a crash is an outcome, not the end of the story.
 *
 * Exit status: 0 the database came through intact, 1 it was corrupted
 * (integrity_check or the rows), 2 the workload crashed, 3 an error.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guard.h"
#include "workload.h"

/* The child's own exit codes; anything else (a signal, a sanitizer's
 * exit) is a crash. */
enum { CHILD_INTACT = 10, CHILD_CORRUPTED = 11, CHILD_ERROR = 13 };

static int child(bool guard, struct workload *w)
{
	alarm(120); /* a corrupted B-tree may loop */
	if (guard_setup(guard ? GUARD_ON : GUARD_TRACKED) || workload_run(w))
		return CHILD_ERROR;
	if (guard)
		printf("sqlite-guard: guarded (domain \"sqlite\", backend %s):",
		       mpk_backend_name(mpk_backend()));
	else
		printf("sqlite-guard: not guarded (malloc):");
	printf(" %ld statements, %ld wild writes fired, %ld faulted and reported\n",
	       w->ops, w->fired, w->faulted);
	printf("sqlite-guard: SQLite's memory (the targets): %zu blocks, %zu bytes\n", w->blocks,
	       w->bytes);
	printf("sqlite-guard: integrity_check: %s; %ld rows, %ld differ from the shadow copy\n",
	       w->integrity, w->rows, w->differ);
	return w->integrity_ok && !w->differ ? CHILD_INTACT : CHILD_CORRUPTED;
}

int main(int argc, char **argv)
{
	struct workload w = { .ops = 20000, .wild = 5000, .seed = 1 };
	bool guard = true;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--no-guard"))
			guard = false;
		else if (!strcmp(argv[i], "--ops") && i + 1 < argc)
			w.ops = atol(argv[++i]);
		else if (!strcmp(argv[i], "--writes") && i + 1 < argc)
			w.wild = atol(argv[++i]);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			w.seed = (unsigned)atol(argv[++i]);
		else {
			fprintf(stderr, "usage: sqlite-guard [--no-guard] [--ops N] [--writes N]"
					" [--seed S]\n");
			return 3;
		}
	}
	if (w.ops < 1 || w.wild < 0 || w.wild > w.ops) {
		fprintf(stderr, "sqlite-guard: want 1 <= ops and 0 <= writes <= ops\n");
		return 3;
	}
	pid_t pid = fork();
	if (pid == 0)
		_exit(child(guard, &w));
	int status;
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 3;
	int rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	switch (rc) {
	case CHILD_INTACT:
		printf("sqlite-guard: the database came through intact\n");
		return 0;
	case CHILD_CORRUPTED:
		printf("sqlite-guard: the database was corrupted\n");
		return 1;
	case CHILD_ERROR:
		return 3;
	}
	if (WIFSIGNALED(status))
		printf("sqlite-guard: the workload crashed: %s\n", strsignal(WTERMSIG(status)));
	else
		printf("sqlite-guard: the workload crashed (exit status %d)\n", rc);
	return 2;
}
