/* SPDX-License-Identifier: MIT */
#include "t_cli.h"

const char *t_cli_prog(void)
{
	if (!access("../mpkit", X_OK))
		return "../mpkit";
	if (system("command -v mpkit >/dev/null 2>&1"))
		t_skip("the mpkit command is not found (../mpkit or PATH)");
	return "mpkit";
}

void t_cli_run(struct t_cli *r, const char *out_path, const char *const *args)
{
	static char *argv[32];
	const char *prog = t_cli_prog();

	argv[0] = (char *)prog;
	for (int i = 0; args[i] && i < 30; i++)
		argv[i + 1] = (char *)args[i], argv[i + 2] = NULL;
	struct t_exec x = { argv, NULL, out_path, NULL };
	struct t_child c = t_child(t_exec_main, &x, T_CHILD_STDOUT | T_CHILD_STDERR);
	snprintf(r->out, sizeof(r->out), "%s", c.out);
	snprintf(r->err, sizeof(r->err), "%s", c.err);
	t_child_free(&c);
	r->status = t_child_shell_status(&c);
}

int t_cli_count(const char *s, const char *what)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}
