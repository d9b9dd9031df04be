/*
 * The JIT example (examples/jit, copied here as ex-jit) as a test: 50
 * patches of its 8 expressions while 2 threads run them, every result
 * checked against its interpreter ("0 wrong", exit 0); and `--stray`, a
 * worker writing the code outside the window: on hw the write faults and
 * mpkit's report names the domain "jit" (SIGABRT); on soft the same,
 * since no thread holds the write window then (r-x pages).
 */
#include "t_exec.h"

static int run(char *const argv[], char *out, size_t cap)
{
	return t_exec_capture("./ex-jit", argv, NULL, 1, out, cap);
}

static void scenario(void)
{
	static char out[1 << 16];
	char *patch[] = { "ex-jit", "--threads", "2", "--rounds", "50", NULL };
	int st = run(patch, out, sizeof(out));
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !strstr(out, "50 patches of 8 expressions") ||
	    !strstr(out, ", 0 wrong"))
		t_fail("ex-jit: status 0x%x, output:\n%s", st, out);
	if (!strstr(out, mpk_backend() == MPK_BACKEND_HW ? "backend hw" : "backend soft"))
		t_fail("ex-jit ran on another backend:\n%s", out);
	char *stray[] = { "ex-jit", "--stray", NULL };
	st = run(stray, out, sizeof(out));
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	CHECK(strstr(out, "write of domain \"jit\"") != NULL);
	CHECK(strstr(out, mpk_backend() == MPK_BACKEND_HW ? "SEGV_PKUERR" : "SEGV_ACCERR") != NULL);
}

int main(void)
{
	return t_both_backends(scenario);
}
