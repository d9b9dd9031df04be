/* SPDX-License-Identifier: MIT */
#include "t_cli.h"

void t_slurp(int fd, char *buf, size_t size)
{
	size_t n = 0;
	for (ssize_t k; n < size - 1 && (k = read(fd, buf + n, size - 1 - n)) > 0;)
		n += (size_t)k;
	buf[n] = 0;
	close(fd);
}

void t_cli_run(struct t_cli *r, const char *out_path, const char *const *args)
{
	static char *argv[32];
	int out[2], err[2];
	const char *prog = access("../mpkit", X_OK) ? "mpkit" : "../mpkit";

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
	if (r->status == 127)
		t_skip("the mpkit command is not found (../mpkit or PATH)");
}
