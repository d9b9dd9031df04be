/* SPDX-License-Identifier: MIT */
#include "t_ex.h"

const char *t_ex_path(const char *name)
{
	static char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 64);

	REQUIRE(n > 0);
	path[n] = 0;
	*strrchr(path, '/') = 0;
	snprintf(path + strlen(path), 64, "/ex/%s", name);
	if (access(path, X_OK)) {
		printf("skip: %s not built\n", path);
		exit(T_SKIP);
	}
	return path;
}

char *t_ex_tmp(const char *tag)
{
	char *name;
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";

	REQUIRE(asprintf(&name, "%s/mpkit-%s.XXXXXX", dir, tag) > 0);
	int fd = mkstemp(name);
	REQUIRE(fd >= 0);
	close(fd);
	return name;
}

char *t_ex_slurp(const char *file, size_t *len)
{
	FILE *f = fopen(file, "rb");
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);

	REQUIRE(f && buf);
	for (size_t k; (k = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
		n += k;
		if (n + 1 == cap)
			REQUIRE((buf = realloc(buf, cap *= 2)));
	}
	fclose(f);
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

pid_t t_ex_spawn(char *const argv[], const char *out, const char *err)
{
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		if (out)
			dup2(open(out, O_WRONLY | O_TRUNC), STDOUT_FILENO);
		if (err)
			dup2(open(err, O_WRONLY | O_TRUNC), STDERR_FILENO);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

int t_ex_wait(pid_t pid)
{
	int status;

	REQUIRE(waitpid(pid, &status, 0) == pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void t_ex_show_some(const char *who, const char *text, int max)
{
	int n = 0;

	for (const char *p = text; *p; n++) {
		const char *e = strchrnul(p, '\n');
		if (n < max)
			printf("  %s| %.*s\n", who, (int)(e - p), p);
		p = *e ? e + 1 : e;
	}
	if (n > max)
		printf("  %s| [%d more lines]\n", who, n - max);
}

void t_ex_show(const char *who, const char *text)
{
	t_ex_show_some(who, text, 1000);
}

int t_ex_run(char *const argv[], char **out, char **err)
{
	const char *who = strrchr(argv[0], '/') + 1;
	struct t_exec x = { argv, NULL, NULL, NULL };
	struct t_child c = t_child(t_exec_main, &x, T_CHILD_STDOUT | (err ? T_CHILD_STDERR : 0));

	*out = c.out;
	t_ex_show(who, *out);
	if (err) {
		*err = c.err;
		printf("  %s stderr:\n", who);
		t_ex_show_some(who, *err, 20);
	}
	return t_child_shell_status(&c);
}
