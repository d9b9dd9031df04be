/* SPDX-License-Identifier: MIT */
/*
 * Where mpkit's reports go (faults, heap misuse): the hook set with
 * mpk_report_sink(), else MPKIT_REPORT (fd:N, or a file opened on the
 * first report and appended to, %p its writer's pid), else stderr.  Each
 * report is built whole in one buffer and delivered in one write() or one
 * call of the hook, so that reports of two threads or processes sharing
 * a file do not interleave.  Async-signal-safe: static buffers, open() and
 * write() only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../shared/env.h"
#include "internal.h"

static mpk_report_fn hook;
static void *hook_arg;
static int spec = MPK_REPORT_STDERR; /* env.h: STDERR, PATH or FD + the fd */
static char path[MPK_REPORT_PATH_MAX];
static int path_fd = -1;
static pid_t path_pid;

void mpk__report_setup(void)
{
	const char *s = mpk__env_value(MPK_ENV_REPORT);

	spec = mpk__env_parse(MPK_ENV_REPORT, 0);
	if (spec == MPK_REPORT_PATH)
		memcpy(path, s, strlen(s) + 1); /* its length was checked */
	else if (spec < 0)
		spec = MPK_REPORT_STDERR; /* bad: init failed and said so */
}

static int put_all(int fd, const char *s, size_t n)
{
	while (n) {
		/* A socket whose reader is gone (mpkit run's, once the program
		 * it ran exited, for a child left behind): EPIPE, not SIGPIPE. */
		ssize_t k = send(fd, s, n, MSG_NOSIGNAL);
		if (k < 0 && errno == ENOTSOCK)
			k = write(fd, s, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		s += k;
		n -= (size_t)k;
	}
	return 0;
}

/* MPKIT_REPORT's file for this process, opened the first time (again in
 * a child, when the name holds its pid); -1 if it cannot be opened. */
static int path_open(void)
{
	pid_t pid = getpid();
	char name[MPK_REPORT_PATH_MAX + 16], num[16];
	int fd = __atomic_load_n(&path_fd, __ATOMIC_ACQUIRE);

	if (fd >= 0 && (pid == path_pid || !strstr(path, "%p")))
		return fd;
	size_t k = sizeof(num), len = 0;
	unsigned v = (unsigned)pid;
	do
		num[--k] = (char)('0' + v % 10);
	while (v /= 10);
	for (const char *s = path; *s && len < sizeof(name) - sizeof(num); s++) {
		if (s[0] == '%' && s[1] == 'p') {
			memcpy(name + len, num + k, sizeof(num) - k);
			len += sizeof(num) - k;
			s++;
		} else {
			name[len++] = *s;
		}
	}
	name[len] = 0;
	fd = open(name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0) {
		static const char msg[] = "mpkit: MPKIT_REPORT: cannot open the report file: the report "
					  "goes to stderr\n";
		put_all(STDERR_FILENO, msg, sizeof(msg) - 1);
		return -1;
	}
	int old = __atomic_exchange_n(&path_fd, fd, __ATOMIC_ACQ_REL);
	if (old >= 0 && path_pid != pid)
		close(old); /* the parent's file, inherited */
	path_pid = pid;
	return fd;
}

MPK_EXPORT int mpk_report_write(const char *text, size_t len)
{
	if (!text && len) {
		errno = EINVAL;
		return -1;
	}
	mpk_report_fn fn = __atomic_load_n(&hook, __ATOMIC_ACQUIRE);
	if (fn) {
		fn(text ? text : "", len, __atomic_load_n(&hook_arg, __ATOMIC_RELAXED));
		return 0;
	}
	int fd = spec >= MPK_REPORT_FD ? spec - MPK_REPORT_FD : spec == MPK_REPORT_PATH ? path_open() : -1;
	/* A descriptor the program closed, a reader gone: stderr rather
	 * than nothing. */
	if (fd < 0 || (put_all(fd, text, len) < 0 && (errno == EBADF || errno == EPIPE)))
		(void)put_all(STDERR_FILENO, text, len);
	return 0;
}

MPK_EXPORT int mpk_report_sink(mpk_report_fn fn, void *arg)
{
	if (!fn && arg) {
		errno = EINVAL; /* an argument for nobody: a mistake */
		return -1;
	}
	if (mpk__ensure_init())
		return -1;
	/* A report under way sees the old pair or the new, never fn with
	 * the old arg: the hook goes first, the argument, then the hook. */
	__atomic_store_n(&hook, NULL, __ATOMIC_RELEASE);
	__atomic_store_n(&hook_arg, arg, __ATOMIC_RELEASE);
	__atomic_store_n(&hook, fn, __ATOMIC_RELEASE);
	return 0;
}

/* ---- a report being built ---- */

static char buf[16384];
static int busy;

struct mpk__text *mpk__report_open(struct mpk__text *small)
{
	static struct mpk__text whole;

	if (__atomic_exchange_n(&busy, 1, __ATOMIC_ACQUIRE))
		return small; /* another report at once: the caller's little one */
	whole = (struct mpk__text){ buf, sizeof(buf), 0 };
	buf[0] = 0;
	return &whole;
}

void mpk__report_close(struct mpk__text *t)
{
	(void)mpk_report_write(t->buf, t->len);
	if (t->buf == buf)
		__atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
}
