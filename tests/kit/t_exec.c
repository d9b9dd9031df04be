/* SPDX-License-Identifier: MIT */
#include "t_exec.h"

int t_exec_capture(const char *path, char *const argv[], char *const env[],
				 int with_stderr, char *out, size_t cap)
{
	int fds[2], status;
	size_t n = 0;
	ssize_t r;

	REQUIRE(pipe(fds) == 0);
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], 1);
		if (with_stderr)
			dup2(fds[1], 2);
		close(fds[0]);
		for (; env && *env; env++)
			if (strchr(*env, '='))
				putenv(*env);
			else
				unsetenv(*env);
		execv(path, argv);
		_exit(127);
	}
	close(fds[1]);
	while (n + 1 < cap && (r = read(fds[0], out + n, cap - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = 0;
	close(fds[0]);
	REQUIRE(waitpid(pid, &status, 0) == pid);
	return status;
}
