/* SPDX-License-Identifier: MIT */
/*
 * A setuid program ignores MPKIT_BACKEND and the other variables
 * (secure_getenv()): whoever runs it cannot downgrade it to the soft
 * backend or break its start with a bad value.  The same program without
 * the setuid bit does read them.  Needs root to make a setuid copy of
 * itself (the VM suite runs as root).
 */
#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "t_env.h"

static const char copy[] = "/tmp/t_env_secure.copy";

/* The child of run_copy(): become uid 65534, then run the copy. */
static void as_nobody(void *exec)
{
	if (setgid(65534) || setuid(65534))
		_exit(90);
	t_exec_main(exec);
}

/* Run the copy as uid 65534 with MPKIT_BACKEND=bogus; its exit status.
 * (Its stderr is captured and dropped: the failing start says why, not
 * news here.) */
static int run_copy(void)
{
	char *argv[] = { (char *)copy, "child", NULL }, *env[] = { "MPKIT_BACKEND=bogus", NULL };
	struct t_exec x = { argv, env, NULL, NULL };
	struct t_child c = t_child(as_nobody, &x, T_CHILD_STDERR);

	t_child_free(&c);
	return t_child_shell_status(&c);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "child")) {
		/* 0: mpk_init worked, 1: EINVAL, 2: other */
		int secure = (int)getauxval(AT_SECURE);
		int rc = mpk_init();
		return rc == 0 ? (secure ? 0 : 3) : errno == EINVAL ? (secure ? 4 : 1) : 2;
	}
	if (geteuid() != 0)
		t_skip("needs root to make a setuid copy (runs in the VM suite)");

	char buf[65536];
	int in = open("/proc/self/exe", O_RDONLY), out;
	REQUIRE(in >= 0);
	unlink(copy);
	REQUIRE((out = open(copy, O_WRONLY | O_CREAT | O_EXCL, 0755)) >= 0);
	for (ssize_t n; (n = read(in, buf, sizeof(buf))) > 0;)
		REQUIRE(write(out, buf, (size_t)n) == n);
	close(in);
	close(out);

	/* not setuid: the variable counts, and the start fails */
	CHECK(run_copy() == 1);
	/* setuid root: AT_SECURE, the variable is ignored, the start works */
	REQUIRE(chmod(copy, 04755) == 0);
	int rc = run_copy();
	if (rc == 3)
		t_fail("the setuid copy did not get AT_SECURE (nosuid /tmp?)");
	CHECK(rc == 0);
	unlink(copy);
	return t_done();
}
