/* SPDX-License-Identifier: MIT */
#include "t_exec.h"

int t_exec_capture(const char *path, char *const argv[], char *const env[], int with_stderr,
		   char *out, size_t cap)
{
	struct t_exec x = { argv, env, NULL, path };
	struct t_child c = t_child(t_exec_main, &x,
				   T_CHILD_STDOUT | (with_stderr ? T_CHILD_MERGED : 0));
	snprintf(out, cap, "%s", c.out);
	t_child_free(&c);
	return c.status;
}
