/* SPDX-License-Identifier: MIT */
/*
 * mpkit-bench-sqlite: examples/sqlite-guard's workload (inserts, updates,
 * deletes, lookups on an in-memory table; no wild writes) with SQLite's
 * memory three ways, side by side, one run each in a child of its own
 * (SQLite's allocator is chosen once per process):
 *
 *   sqlite        SQLite's own allocator (malloc), as shipped;
 *   tracked       our allocator hook over malloc, every block listed (what
 *                 the unguarded example runs);
 *   guarded       the hook over an mpk_heap in domain "sqlite", writable
 *                 only inside sqlite3_* calls (two rights changes a call).
 *
 *   mpkit-bench-sqlite [--ops N]      (default 50000)
 *
 * On hw a rights change is a WRPKRU; on soft it is an mprotect() pair per
 * call, and the table says which ran.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guard.h"
#include "workload.h"
#include "options.h"

static const struct {
	enum guard_mode mode;
	const char *name;
} modes[] = {
	{ GUARD_NONE, "sqlite" },
	{ GUARD_TRACKED, "tracked" },
	{ GUARD_ON, "guarded" },
};

/* Seconds for the workload in mode, from a child; < 0 on failure. */
static double run(enum guard_mode mode, long ops)
{
	int fd[2];
	double s = -1;

	if (pipe(fd))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		struct workload w = { .ops = ops, .seed = 1 };
		close(fd[0]);
		if (!guard_setup(mode) && !workload_run(&w) && w.integrity_ok && !w.differ)
			s = w.seconds;
		(void)!write(fd[1], &s, sizeof(s));
		_exit(0);
	}
	close(fd[1]);
	if (pid < 0 || read(fd[0], &s, sizeof(s)) != sizeof(s))
		s = -1;
	close(fd[0]);
	waitpid(pid, NULL, 0);
	return s;
}

int main(int argc, char **argv)
{
	long ops = 50000;
	double base = 0;

	int n = 50000;
	const struct bench_opt opts[] = {
		{ "ops", 0, BO_INT, &n, "N", "statements per run (default 50000)", 1, 1e9 },
		{ NULL, 0 },
	};
	const struct bench_cli cli = { argv[0], "sqlite-guard's throughput with and without the guard.\n", NULL, opts };
	int rc = bench_options(&cli, argc, argv);

	if (rc >= 0)
		return rc;
	ops = n;
	if (mpk_init()) {
		perror("mpk_init");
		return 1;
	}
	printf("sqlite-guard workload, %ld statements, backend %s, one run each\n\n", ops,
	       mpk_backend_name(mpk_backend()));
	printf("%-10s %12s %14s %16s\n", "memory", "seconds", "statements/s", "vs sqlite");
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		double s = run(modes[i].mode, ops);
		if (s <= 0) {
			printf("%-10s %12s\n", modes[i].name, "failed");
			return 1;
		}
		if (i == 0)
			base = s;
		printf("%-10s %12.3f %14.0f %15.2fx\n", modes[i].name, s, ops / s, base / s);
	}
	return 0;
}
