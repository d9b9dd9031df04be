/* SPDX-License-Identifier: MIT */
/* For tests of the mpkit command: run it, collect what it prints. */
#ifndef MPK_TEST_CLI_H
#define MPK_TEST_CLI_H

#include <fcntl.h>
#include <sys/prctl.h>

#include "t.h"

struct t_cli {
	int status;      /* exit status, or 128 + signal */
	char out[65536]; /* stdout */
	char err[4096];  /* stderr */
};

/* Read fd to EOF into buf (NUL-terminated, truncated to size). */
static inline void t_slurp(int fd, char *buf, size_t size)
{
	size_t n = 0;
	for (ssize_t k; n < size - 1 && (k = read(fd, buf + n, size - 1 - n)) > 0;)
		n += (size_t)k;
	buf[n] = 0;
	close(fd);
}

/* The command: the build tree's ../mpkit (tests run from inside their
 * directory), else mpkit from PATH (the VM); skips when there is none. */
static inline const char *t_cli_prog(void)
{
	if (!access("../mpkit", X_OK))
		return "../mpkit";
	if (system("command -v mpkit >/dev/null 2>&1"))
		t_skip("the mpkit command is not found (../mpkit or PATH)");
	return "mpkit";
}

/*
 * Run `mpkit ARGS...` (NULL-terminated): the build tree's ../mpkit (tests
 * run from inside their directory), else mpkit from PATH (the VM).  stdout
 * goes to a pipe unless out_path names a file to open for it.
 */
static inline void t_cli_run(struct t_cli *r, const char *out_path, const char *const *args)
{
	static char *argv[32];
	int out[2], err[2];
	const char *prog = t_cli_prog();

	argv[0] = (char *)prog;
	for (int i = 0; args[i] && i < 30; i++)
		argv[i + 1] = (char *)args[i], argv[i + 2] = NULL;
	REQUIRE(pipe(out) == 0 && pipe(err) == 0);
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		int o = out_path ? open(out_path, O_WRONLY) : out[1];
		if (o < 0)
			_exit(126);
		dup2(o, 1);
		dup2(err[1], 2);
		execvp(prog, argv);
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	t_slurp(out[0], r->out, sizeof(r->out));
	t_slurp(err[0], r->err, sizeof(r->err));
	int st;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#endif
