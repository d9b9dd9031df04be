/*
 * `mpkit watch -- PROG`: the LD_PRELOAD helper on a program that knows
 * nothing of mpkit (watch-target: bumps `counter` 5 times from bump(),
 * `neighbour` in the same page 3 times).  With MPKIT_WATCH=counter the
 * report file (MPKIT_WATCH_OUT) has exactly 5 writes of counter+0, each
 * with a backtrace naming bump, and "5 accesses reported"; the program's
 * own output is right (counter=5 neighbour=3).  With /r the 5 reads are
 * reported too (10).  Without MPKIT_WATCH nothing is reported.  Both
 * backends: soft forced in the first run through MPKIT_BACKEND.
 */
#include <fcntl.h>

#include "t_cli.h"
#include "t_exec.h"

/* Run `mpkit watch -- ./watch-target` with MPKIT_WATCH=spec (NULL: unset):
 * the program's stdout into out, the report file into rep. */
static void run(const char *backend, const char *spec, char *rep, char *out, size_t cap)
{
	static char cwd[4096], lib[4200], file[4200], be[64], watch[256];

	REQUIRE(getcwd(cwd, sizeof(cwd)));
	snprintf(lib, sizeof(lib), "MPKIT_WATCH_LIB=%s/libmpkit-watch.so", cwd);
	snprintf(file, sizeof(file), "MPKIT_WATCH_OUT=%s/watch-report.%d", cwd, (int)getpid());
	snprintf(be, sizeof(be), "MPKIT_BACKEND=%s", backend);
	if (spec)
		snprintf(watch, sizeof(watch), "MPKIT_WATCH=%s", spec);
	else
		strcpy(watch, "MPKIT_WATCH");
	const char *path = strchr(file, '=') + 1;
	unlink(path);
	char *argv[] = { "mpkit", "watch", "--", "./watch-target", NULL };
	char *env[] = { lib, file, be, watch, NULL };
	int st = t_exec_capture(t_cli_prog(), argv, env, 0, out, cap);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	rep[0] = 0;
	int fd = open(path, O_RDONLY);
	if (fd >= 0) {
		ssize_t n = read(fd, rep, cap - 1);
		rep[n > 0 ? n : 0] = 0;
		close(fd);
	}
	unlink(path);
}

static void backend_runs(const char *backend)
{
	static char rep[1 << 16], out[1 << 16];

	run(backend, "counter", rep, out, sizeof(rep));
	CHECK(!strcmp(out, "counter=5 neighbour=3\n"));
	CHECK(t_cli_count(rep, "mpkit watch: write of counter+0 at ") == 5);
	CHECK(t_cli_count(rep, "mpkit watch: read of") == 0);
	CHECK(t_cli_count(rep, "(bump+") >= 5);
	CHECK(strstr(rep, "mpkit watch: watching counter at ") != NULL);
	CHECK(strstr(rep, "mpkit watch: 5 accesses reported") != NULL);
	if (t_failures)
		fprintf(stderr, "%s report:\n%s\noutput: %s\n", backend, rep, out);

	run(backend, "counter/r", rep, out, sizeof(rep));
	CHECK(!strcmp(out, "counter=5 neighbour=3\n"));
	CHECK(t_cli_count(rep, "mpkit watch: write of counter+0") == 5);
	CHECK(t_cli_count(rep, "mpkit watch: read of counter+0") >= 5);

	run(backend, NULL, rep, out, sizeof(rep));
	CHECK(!strcmp(out, "counter=5 neighbour=3\n"));
	CHECK(t_cli_count(rep, "mpkit watch: write") == 0);
}

int main(void)
{
	if (access("./watch-target", X_OK) || access("./libmpkit-watch.so", R_OK))
		t_skip("watch-target or libmpkit-watch.so missing (make tests)");
	backend_runs("soft");
	if (t_backend() == MPK_BACKEND_HW)
		backend_runs("hw");
	return t_done();
}
