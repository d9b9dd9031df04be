/* SPDX-License-Identifier: MIT */
/*
 * gnuplot for the benchmarks' plots (Debian: gnuplot-nox): a program we
 * run, never a library we link.  Finding it, and running it on a script
 * and its data in a temporary directory, its SVG copied where asked only
 * once it succeeded.  Also the programs' finding the benchmarks of real
 * programs share: on PATH, not a script, beside this one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gnuplot.h"

extern char **environ;

int bench_find_on_path(const char *name, char *out, size_t len, int (*accept)(const char *path))
{
	char def[256];
	const char *path = getenv("PATH");
	if (!path) {
		size_t n = confstr(_CS_PATH, def, sizeof(def));
		path = n > 0 && n <= sizeof(def) ? def : "/bin:/usr/bin";
	}
	for (const char *p = path;;) {
		const char *end = strchrnul(p, ':');
		int dl = (int)(end - p);
		struct stat st;
		/* an empty entry is the current directory */
		int n = snprintf(out, len, "%.*s/%s", dl ? dl : 1, dl ? p : ".", name);
		if (n > 0 && (size_t)n < len && !stat(out, &st) && S_ISREG(st.st_mode) && !access(out, X_OK) &&
		    (!accept || accept(out)))
			return 0;
		if (!*end)
			return -1;
		p = end + 1;
	}
}

/* A program, not a script that runs one (pyenv's shims are shell
 * scripts: they would run under the allocator or the guard too). */
int bench_not_script(const char *path)
{
	char head[2] = { 0 };
	FILE *f = fopen(path, "r");

	if (f) {
		if (fread(head, 1, 2, f) != 2)
			head[0] = 0;
		fclose(f);
	}
	return !(head[0] == '#' && head[1] == '!');
}

/* name beside this program (in the build tree, in the installed
 * helpers' directory) into path: 0, or -1 when /proc/self/exe is not
 * there (path is then name alone). */
int bench_beside_me(const char *name, char *path, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0) {
		snprintf(path, len, "%s", name);
		return -1;
	}
	self[n] = 0;
	*strrchr(self, '/') = 0;
	snprintf(path, len, "%s/%s", self, name);
	return 0;
}

/* Starts argv[0] (a path, no PATH search: we run what we found) with stdin
 * from /dev/null, so that it never waits for a terminal, and stdout on fd
 * out.  0 and *pid, or an errno value. */
static int spawn(char *const argv[], int out, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	int err = posix_spawn_file_actions_init(&fa);
	if (err)
		return err;
	err = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (!err && out != 1)
		err = posix_spawn_file_actions_adddup2(&fa, out, 1);
	if (!err)
		err = posix_spawn(pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	return err;
}

static int reap(pid_t pid)
{
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return status;
}

const char *bench_status_str(int status, char *buf, size_t len)
{
	if (status == -1)
		snprintf(buf, len, "lost: %s", strerror(errno));
	else if (WIFEXITED(status))
		snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d, %s", WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "wait status %#x", status);
	return buf;
}

int bench_gnuplot_find(struct bench_gnuplot *g)
{
	int fd[2], major = 0, minor = 0;
	pid_t pid;
	char out[128];
	size_t n = 0;

	memset(g, 0, sizeof(*g));
	if (bench_find_on_path("gnuplot", g->exe, sizeof(g->exe), NULL)) {
		g->exe[0] = 0;
		snprintf(g->why, sizeof(g->why), "gnuplot not found on PATH");
		return -1;
	}
	g->found = 1;
	/* Its first line of --version names it in our message: "gnuplot 5.4
	 * patchlevel 4". */
	if (pipe2(fd, O_CLOEXEC)) {
		snprintf(g->why, sizeof(g->why), "cannot run %s: pipe: %s", g->exe, strerror(errno));
		return -1;
	}
	char *argv[] = { g->exe, "--version", NULL };
	int err = spawn(argv, fd[1], &pid);
	close(fd[1]);
	if (err) {
		close(fd[0]);
		snprintf(g->why, sizeof(g->why), "cannot run %s: %s", g->exe, strerror(err));
		return -1;
	}
	for (;;) { /* read it all, so that the child never blocks on a full pipe */
		char tmp[256];
		ssize_t k = read(fd[0], tmp, sizeof(tmp));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		size_t c = (size_t)k < sizeof(out) - 1 - n ? (size_t)k : sizeof(out) - 1 - n;
		memcpy(out + n, tmp, c);
		n += c;
	}
	close(fd[0]);
	out[n] = 0;
	out[strcspn(out, "\r\n")] = 0;
	int status = reap(pid);
	if (status != 0 || sscanf(out, "gnuplot %d.%d", &major, &minor) != 2) {
		char st[80];
		snprintf(g->why, sizeof(g->why), "%s --version did not answer as gnuplot does (%s)", g->exe,
			 status ? bench_status_str(status, st, sizeof(st)) : "no version line");
		return -1;
	}
	snprintf(g->version, sizeof(g->version), "%s", out);
	/* The script uses gnuplot 5 syntax (dash types, NaN key entries). */
	if (major < 5) {
		snprintf(g->why, sizeof(g->why), "%s (%s) is older than gnuplot 5.0", g->version, g->exe);
		return -1;
	}
	return 0;
}

/* A gnuplot string literal: in single quotes only '' is special. */
void bench_gnuplot_quote(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		fputc(*s == '\n' || *s == '\r' ? ' ' : *s, f);
	}
	fputc('\'', f);
}

/* Copies the SVG gnuplot wrote into the file asked for: written only once
 * gnuplot succeeded, so a failure leaves an older plot alone. */
static int copy_file(const char *from, const char *to)
{
	char buf[1 << 16];
	size_t n;
	int err = 0;
	FILE *in = fopen(from, "r"), *out;
	if (!in)
		return -1;
	if (!(out = fopen(to, "w"))) {
		err = errno;
		fclose(in);
		errno = err;
		return -1;
	}
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		if (fwrite(buf, 1, n, out) != n) {
			err = errno;
			break;
		}
	if (ferror(in) && !err)
		err = errno ? errno : EIO;
	fclose(in);
	if (fclose(out) && !err)
		err = errno;
	errno = err;
	return err ? -1 : 0;
}

int bench_gnuplot_draw(const char *path, const struct bench_gnuplot *g,
		       int (*write_input)(const char *dat, const char *gp, const void *arg), const void *arg, char *why,
		       size_t len)
{
	const char *tmp = getenv("TMPDIR");
	char dir[512], dat[600], gp[600], svg[600], st[80];
	int rc = -1, fd = -1;
	struct stat sb;

	snprintf(dir, sizeof(dir), "%s/mpkit-plot.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		snprintf(why, len, "cannot make a temporary directory for gnuplot's input (%s): %s", dir, strerror(errno));
		return -1;
	}
	snprintf(dat, sizeof(dat), "%s/plot.dat", dir);
	snprintf(gp, sizeof(gp), "%s/plot.gp", dir);
	snprintf(svg, sizeof(svg), "%s/plot.svg", dir);
	if (write_input(dat, gp, arg)) {
		snprintf(why, len, "cannot write gnuplot's input in %s: %s", dir, strerror(errno));
		goto out;
	}
	/* gnuplot writes the SVG on its stdout, so that the user's file name
	 * never has to be quoted for gnuplot */
	if ((fd = open(svg, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
		snprintf(why, len, "cannot create %s: %s", svg, strerror(errno));
		goto out;
	}
	char *argv[] = { (char *)g->exe, gp, NULL };
	pid_t pid;
	int err = spawn(argv, fd, &pid);
	close(fd);
	if (err) {
		snprintf(why, len, "%s (%s) could not be started: %s", g->version, g->exe, strerror(err));
		goto out;
	}
	int status = reap(pid);
	if (status != 0) {
		snprintf(why, len, "%s (%s) failed (%s; its messages are above on stderr)", g->version, g->exe,
			 bench_status_str(status, st, sizeof(st)));
		goto out;
	}
	if (stat(svg, &sb) || sb.st_size == 0) {
		snprintf(why, len, "%s (%s) exited 0 but wrote no SVG", g->version, g->exe);
		goto out;
	}
	rc = copy_file(svg, path) ? -2 : 0;
out:
	err = errno;
	unlink(dat);
	unlink(gp);
	unlink(svg);
	rmdir(dir);
	errno = err;
	return rc;
}
