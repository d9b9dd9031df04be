/* SPDX-License-Identifier: MIT */
/*
 * One run of a `mpkit bench malloc` (or `bench guard`) workload: its
 * steps, one after another, each a child in a process group of its own,
 * timed from fork() to wait4(), with wait4()'s ru_maxrss: the peak
 * resident set of the largest single process among the child and the
 * descendants it waited for (gcc's cc1, git's pack-objects), not their
 * sum.  What a step prints on stdout is hashed as it is read (the
 * hashing is outside the timed child, but inside its wall time when it
 * lasts longer), and so are the files the workload names, for the
 * comparison with the reference runs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "malloc.h"
#include "gnuplot.h"
#include "options.h"
#include "timing.h"

/* Seconds. */
static double now(void)
{
	return now_ns() * 1e-9;
}

/* FNV-1a, 64 bits: enough to tell outputs apart, and no library. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * 0x100000001b3ull;
	return h;
}
#define FNV_START 0xcbf29ce484222325ull

static int rm_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb, (void)type, (void)ftw;
	return remove(path);
}

int mb_rmtree(const char *path)
{
	struct stat sb;

	if (lstat(path, &sb))
		return errno == ENOENT ? 0 : -1;
	return nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS);
}

const char *mb_part_name(const struct mb_work *w, int i)
{
	for (int s = 0; s < w->nsteps; s++)
		if (!w->steps[s].out && !i--)
			return w->steps[s].what;
	for (int f = 0; w->files[f]; f++)
		if (!i--)
			return w->files[f];
	return "?";
}

static int hash_file(const char *path, uint64_t *h)
{
	char buf[1 << 16];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	*h = FNV_START;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		*h = fnv(*h, buf, (size_t)n);
	int err = n < 0 ? errno : 0;
	close(fd);
	errno = err;
	return n < 0 ? -1 : 0;
}

/* The first line of what the steps wrote on stderr that says something:
 * ld.so's word when a preload failed, else the last non-empty line. */
static void stderr_line(const char *path, char *out, size_t len)
{
	char line[512];
	FILE *f = fopen(path, "r");

	*out = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (strstr(line, "cannot be preloaded")) {
			snprintf(out, len, "%s", line);
			break;
		}
		if (*line)
			snprintf(out, len, "%s", line);
	}
	fclose(f);
}

/* ld.so ignores a preload it cannot load, and the program runs on
 * glibc's malloc: that would be a wrong figure, not a slow one. */
static int preload_failed(const char *path)
{
	char line[512];

	stderr_line(path, line, sizeof(line));
	return strstr(line, "cannot be preloaded") != NULL;
}

static void fail(struct mb_run *r, const char *fmt, const char *a, const char *b)
{
	if (!r->failed)
		snprintf(r->why, sizeof(r->why), fmt, a, b);
	r->failed = 1;
}

/* The child: its own process group (a timeout kills its descendants too),
 * the run directory, stdin, stdout and stderr, then the program. */
static void child(const char *prog, const struct mb_step *st, const char *rundir, int out, int err,
		  char *const envp[])
{
	setpgid(0, 0);
	int in = chdir(rundir) ? -1 : open(st->in ? st->in : "/dev/null", O_RDONLY);
	if (st->out)
		out = open(st->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) {
		dprintf(err, "mpkit bench: cannot set up %s's files in %s: %s\n", prog, rundir, strerror(errno));
		_exit(126);
	}
	execve(prog, (char *const *)st->argv, envp);
	dprintf(2, "mpkit bench: cannot run %s: %s\n", prog, strerror(errno));
	_exit(127);
}

/* Waits for the child while hashing its stdout (rd, -1: not compared):
 * its wait status, or -1 when it ran out of time or the run was stopped
 * (bench_stop): then killed with its process group, and reaped.  The stop
 * signals are blocked but inside ppoll(): one that comes between the
 * check and the wait still ends the wait. */
static int await(pid_t pid, int rd, double deadline, uint64_t *h, struct rusage *ru, double *end)
{
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0), status = -1, exited = 0;
	char buf[1 << 16];
	sigset_t stops, old;

	sigemptyset(&stops);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGHUP);
	sigprocmask(SIG_BLOCK, &stops, &old);
	while ((rd >= 0 || !exited) && !bench_stop) {
		struct pollfd p[2];
		int n = 0;
		double left = deadline - now();
		if (left <= 0)
			break;
		if (rd >= 0)
			p[n++] = (struct pollfd){ .fd = rd, .events = POLLIN };
		if (!exited && pfd >= 0)
			p[n++] = (struct pollfd){ .fd = pfd, .events = POLLIN };
		if (!n) { /* no pidfd (before Linux 5.3): wait without a limit */
			sigprocmask(SIG_SETMASK, &old, NULL);
			while (wait4(pid, &status, 0, ru) < 0 && errno == EINTR)
				if (bench_stop)
					kill(-pid, SIGKILL);
			sigprocmask(SIG_BLOCK, &stops, NULL);
			*end = now();
			exited = 1;
			continue;
		}
		struct timespec ts = { (time_t)left, (long)((left - (double)(time_t)left) * 1e9) };
		if (ppoll(p, (nfds_t)n, &ts, &old) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < n; i++) {
			if (!p[i].revents)
				continue;
			if (p[i].fd == rd) {
				ssize_t k = read(rd, buf, sizeof(buf));
				if (k > 0)
					*h = fnv(*h, buf, (size_t)k);
				else if (k == 0 || errno != EINTR)
					rd = -1;
			} else if (wait4(pid, &status, WNOHANG, ru) == pid) {
				*end = now();
				exited = 1;
			}
		}
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (pfd >= 0)
		close(pfd);
	if (exited && rd < 0 && !bench_stop)
		return status;
	kill(-pid, SIGKILL);
	if (!exited)
		while (wait4(pid, &status, 0, ru) < 0 && errno == EINTR)
			;
	return -1;
}

static void run_step(const struct mb_work *w, int s, const char *prog, const char *rundir, int errfd,
		     const char *errpath, char *const envp[], double timeout, struct mb_run *r)
{
	const struct mb_step *st = &w->steps[s];
	int fds[2] = { -1, -1 };
	struct rusage ru;
	uint64_t h = FNV_START;
	char what[800], line[512];

	if (!st->out && pipe2(fds, O_CLOEXEC)) {
		fail(r, "%s: pipe: %s", st->what, strerror(errno));
		return;
	}
	memset(&ru, 0, sizeof(ru));
	double t0 = now(), t1 = 0;
	pid_t pid = fork();
	if (pid == 0)
		child(prog, st, rundir, st->out ? -1 : fds[1], errfd, envp);
	if (fds[1] >= 0)
		close(fds[1]);
	if (pid < 0) {
		if (fds[0] >= 0)
			close(fds[0]);
		fail(r, "%s: fork: %s", st->what, strerror(errno));
		return;
	}
	int status = await(pid, st->out ? -1 : fds[0], t0 + timeout, &h, &ru, &t1);
	if (fds[0] >= 0)
		close(fds[0]);
	r->secs += t1 - t0;
	if (ru.ru_maxrss > r->maxrss_kib)
		r->maxrss_kib = ru.ru_maxrss;
	if (!st->out && r->nparts < MB_MAX_PARTS)
		r->part[r->nparts++] = h;
	stderr_line(errpath, line, sizeof(line));
	if (status == -1 && bench_stop) {
		fail(r, "%s: %s", st->what, "stopped");
	} else if (status == -1) {
		snprintf(what, sizeof(what), "%s: still running after %.0f s, killed", st->what, timeout);
		fail(r, "%s%s", what, "");
	} else if (status) {
		bench_status_str(status, what, sizeof(what));
		snprintf(what + strlen(what), sizeof(what) - strlen(what), "%s%s", *line ? ": " : "", line);
		fail(r, "%s: %s", st->what, what);
	} else if (preload_failed(errpath)) {
		fail(r, "%s: the allocator was not loaded: %s", st->what, line);
	}
}

void mb_run(const struct mb_work *w, const char *prog, const char *dir, char *const envp[], double timeout,
	    struct mb_run *r)
{
	char rundir[4096], errpath[4096], path[8192];

	memset(r, 0, sizeof(*r));
	snprintf(rundir, sizeof(rundir), "%s/run", dir);
	snprintf(errpath, sizeof(errpath), "%s/stderr", dir);
	if (mb_rmtree(rundir) || mkdir(rundir, 0755)) {
		fail(r, "cannot make %.400s: %s", rundir, strerror(errno));
		return;
	}
	int errfd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
	if (errfd < 0) {
		fail(r, "cannot create %.400s: %s", errpath, strerror(errno));
		return;
	}
	for (int s = 0; s < w->nsteps && !r->failed; s++)
		run_step(w, s, prog, rundir, errfd, errpath, envp, timeout, r);
	close(errfd);
	for (int f = 0; w->files[f] && !r->failed && r->nparts < MB_MAX_PARTS; f++) {
		snprintf(path, sizeof(path), "%s/%s", rundir, w->files[f]);
		if (hash_file(path, &r->part[r->nparts++]))
			fail(r, "%s: %s", w->files[f], strerror(errno));
	}
	if (mb_rmtree(rundir) && !r->failed)
		fail(r, "cannot remove %.400s: %s", rundir, strerror(errno));
}
