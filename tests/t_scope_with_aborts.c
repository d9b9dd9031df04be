/* SPDX-License-Identifier: MIT */
/*
 * With MPK_WITH_ABORTS defined, an MPK_WITH whose mpk_enter() fails does
 * not skip its body silently: it prints the file, line and error on stderr
 * and aborts.  One that succeeds runs as always.
 */
#define MPK_WITH_ABORTS 1
#include "t_state.h"

int main(void)
{
	t_backend();
	mpk_domain *d = mpk_domain_create("with-aborts", MPK_NONE, 0);
	REQUIRE(d);
	unsigned char *p = mpk_alloc(d, t_page());
	REQUIRE(p);

	int ran = 0;
	MPK_WITH(d, MPK_RW) {
		p[0] = 1;
		ran = 1;
	}
	CHECK(ran && mpk_get(d) == MPK_NONE);

	int fds[2];
	REQUIRE(pipe(fds) == 0);
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], 2);
		MPK_WITH(d, 5) {
			_exit(10); /* the body must not run */
		}
		_exit(11); /* nor the code after it */
	}
	close(fds[1]);
	char out[512];
	ssize_t n = read(fds[0], out, sizeof(out) - 1);
	out[n > 0 ? n : 0] = 0;
	int st;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	CHECK(strstr(out, "t_scope_with_aborts.c:") != NULL);
	CHECK(strstr(out, "mpk_enter failed: Invalid argument") != NULL);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
