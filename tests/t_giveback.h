/* SPDX-License-Identifier: MIT */
/* The lockdown give-back tests: a scenario per lockdown mode, each in a
 * child of its own (the filter is for good). */
#ifndef T_GIVEBACK_H
#define T_GIVEBACK_H

#include "t.h"

#include <stdbool.h>

/* Run scenario(flags, meta) in a child with its own count of failures:
 * true if it exited 0; a death (SIGSYS: the filter) or a failure is this
 * test's failure.  meta: MPKIT_HEAP_META for the child, NULL as chosen. */
static inline bool t_giveback_child(void (*scenario)(unsigned flags, const char *meta),
				    unsigned flags, const char *meta)
{
	const char *mode = flags & MPK_LOCK_ERRNO ? "MPK_LOCK_ERRNO" : "default (SIGSYS)";
	const char *how = meta ? meta : "as chosen";
	int status;

	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		t_failures = 0;
		if (meta)
			setenv("MPKIT_HEAP_META", meta, 1);
		scenario(flags, meta);
		fflush(NULL);
		_exit(t_done());
	}
	REQUIRE(waitpid(pid, &status, 0) == pid);
	if (WIFSIGNALED(status))
		t_fail("%s, metadata %s: killed by signal %d%s", mode, how, WTERMSIG(status),
		       WTERMSIG(status) == SIGSYS ? " (SIGSYS: the filter)" : "");
	else if (WEXITSTATUS(status))
		t_fail("%s, metadata %s: exit %d", mode, how, WEXITSTATUS(status));
	return WIFEXITED(status) && !WEXITSTATUS(status);
}

#endif
