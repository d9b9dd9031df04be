/* SPDX-License-Identifier: MIT */
/*
 * `mpkit bench malloc` stopped by SIGINT in the middle of a run: it kills
 * and reaps what it started, removes its temporary directory and exits
 * 130.  The test is the children's subreaper: a workload left running or
 * unreaped would become its child, and is looked for once mpkit is gone.
 * A real workload (python3, else sqlite3, else GNU sort; skipped when none
 * is here), full size, so that it is still running when the signal comes.
 */
#include <dirent.h>
#include <glob.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "t_cli.h"

/* A run of the workload is under way: its run directory exists. */
static int running(const char *tmp, const char *w)
{
	char pat[4200];
	glob_t g;

	snprintf(pat, sizeof(pat), "%s/mpkit-bench-malloc.*/%s/run", tmp, w);
	int found = glob(pat, 0, NULL, &g) == 0;
	if (found)
		globfree(&g);
	return found;
}

static int empty(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n == 0;
}

int main(void)
{
	static struct t_cli r;
	static const char *const cand[][2] = {
		{ "python", "python3 -c pass" }, { "sqlite", "sqlite3 -version" }, { "sort", "sort --version | grep -q GNU" },
	};
	const char *w = NULL;
	char tmp[4096], cmd[128];

	for (int i = 0; i < 3 && !w; i++) {
		snprintf(cmd, sizeof(cmd), "(%s) >/dev/null 2>&1", cand[i][1]);
		if (!system(cmd))
			w = cand[i][0];
	}
	if (!w)
		t_skip("none of python3, sqlite3, GNU sort is installed (tools/deps.sh test)");
	t_cli_run(&r, NULL, (const char *[]){ "bench", "malloc", "--help", NULL });
	if (r.status == 1 && strstr(r.err, "not found"))
		t_skip("mpkit-bench-malloc is not next to mpkit here");
	REQUIRE(getcwd(tmp, sizeof(tmp) - 32));
	strcat(tmp, "/t_cli_bench_stop.tmp");
	REQUIRE(mkdir(tmp, 0755) == 0 || errno == EEXIST);
	REQUIRE(empty(tmp));
	REQUIRE(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);

	const char *prog = t_cli_prog();
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		setenv("TMPDIR", tmp, 1);
		int fd = open("/dev/null", O_WRONLY);
		dup2(fd, 1);
		execlp(prog, prog, "bench", "malloc", "--workloads", w, "--quiet", (char *)NULL);
		_exit(127);
	}
	int st, waited = 0;
	for (; waited < 1200 && !running(tmp, w); waited++) {
		struct timespec ts = { 0, 50000000 };
		nanosleep(&ts, NULL);
		REQUIRE(waitpid(pid, &st, WNOHANG) == 0); /* still there */
	}
	CHECK(running(tmp, w));
	printf("%s under way after %.2f s: SIGINT\n", w, waited * 0.05);
	REQUIRE(kill(pid, SIGINT) == 0);
	REQUIRE(waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 130)
		t_fail("status %#x, want exit 130", st);
	if (!empty(tmp))
		t_fail("the temporary directory is left in %s", tmp);
	/* Nothing of it is left: no child running, none unreaped. */
	pid_t left = waitpid(-1, &st, WNOHANG);
	if (left != -1 || errno != ECHILD) {
		t_fail("a process of the run is left (waitpid: %d)", (int)left);
	}
	rmdir(tmp);
	return t_done();
}
