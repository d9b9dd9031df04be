/* SPDX-License-Identifier: MIT */
/*
 * `mpkit watch --syscalls`: PROG runs under ptrace, and every system call
 * of its threads that fails with EFAULT is reported, with its arguments
 * and the watched range an argument points into.  The kernel's copy to or
 * from a closed page fails without a signal, so this is the one place such
 * a failure can be seen from outside the program's own error handling.
 *
 * The helper hands the tracer the watched ranges through a pipe
 * (MPKIT_WATCH_FD, tools/watch_preload.c) once they are set.  Only PROG's
 * threads are traced (PTRACE_O_TRACECLONE), not the processes it starts,
 * as only PROG is watched.  Every system call stops PROG twice: this is
 * the slow mode, asked for.  Job control does not stop a traced PROG
 * (it was attached with PTRACE_TRACEME: a group-stop is resumed).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "watch_trace.h"

#define RANGES 16
#define THREADS 256

struct range {
	unsigned long addr, len;
	char name[128];
};

/* A thread of PROG, and the system call it is in. */
struct entered {
	pid_t tid; /* 0: free */
	bool in;   /* between a call's entry and its exit */
	unsigned long nr, args[6];
};

static struct range ranges[RANGES];
static int nranges, table_fd = -1;
static struct entered entered[THREADS];
static FILE *out;
static pid_t prog;

/* The names of the calls that take buffers (the others by number). */
#define NAME(n, a) { SYS_##n, #n, a }
static const struct {
	long nr;
	const char *name;
	int nargs;
} calls[] = {
	NAME(read, 3), NAME(write, 3), NAME(pread64, 4), NAME(pwrite64, 4), NAME(readv, 3),
	NAME(writev, 3), NAME(preadv, 5), NAME(pwritev, 5), NAME(recvfrom, 6), NAME(sendto, 6),
	NAME(recvmsg, 3), NAME(sendmsg, 3), NAME(getrandom, 3), NAME(fstat, 2), NAME(newfstatat, 4),
	NAME(statx, 5), NAME(getdents64, 3), NAME(readlinkat, 4), NAME(getcwd, 2), NAME(pipe2, 2),
	NAME(wait4, 4), NAME(ioctl, 3), NAME(openat, 4), NAME(ppoll, 5), NAME(epoll_pwait, 6),
	NAME(futex, 6), NAME(clock_gettime, 2), NAME(uname, 1), NAME(getsockopt, 5),
	NAME(accept4, 4), NAME(socketpair, 4), NAME(prlimit64, 4), NAME(rt_sigaction, 4),
	NAME(rt_sigprocmask, 4), NAME(sigaltstack, 2), NAME(clock_nanosleep, 4),
};

/* The ranges the helper has written so far (it writes them all at once,
 * before PROG's main(); the read end does not block). */
static void ranges_read(void)
{
	static char buf[RANGES * 180];
	static size_t have;
	ssize_t n;

	while (table_fd >= 0 && have < sizeof(buf) - 1 &&
	       (n = read(table_fd, buf + have, sizeof(buf) - 1 - have)) > 0)
		have += (size_t)n;
	buf[have] = 0;
	nranges = 0;
	for (char *line = buf, *nl; nranges < RANGES && (nl = strchr(line, '\n')); line = nl + 1) {
		struct range *r = &ranges[nranges];
		*nl = 0;
		if (sscanf(line, "%lx %lx %127s", &r->addr, &r->len, r->name) == 3)
			nranges++;
		*nl = '\n';
	}
}

/* What v is to the watches: "NAME+OFF", "the page of NAME", or NULL. */
static const char *watched(unsigned long v, char *buf, size_t size)
{
	unsigned long ps = (unsigned long)sysconf(_SC_PAGESIZE);

	for (int i = 0; i < nranges; i++) {
		const struct range *r = &ranges[i];
		if (v >= r->addr && v - r->addr < r->len) {
			snprintf(buf, size, "%s+%lu", r->name, v - r->addr);
			return buf;
		}
		if (v >= (r->addr & ~(ps - 1)) && v < ((r->addr + r->len + ps - 1) & ~(ps - 1))) {
			snprintf(buf, size, "the page of %s", r->name);
			return buf;
		}
	}
	return NULL;
}

static void report(pid_t tid, const struct entered *e)
{
	const char *name = NULL;
	int nargs = 6;
	char what[160];
	const char *hit = NULL;
	int which = 0;

	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		if ((unsigned long)calls[i].nr == e->nr)
			name = calls[i].name, nargs = calls[i].nargs;
	ranges_read();
	if (name)
		fprintf(out, "mpkit watch: %s(", name);
	else
		fprintf(out, "mpkit watch: syscall %lu(", e->nr);
	for (int i = 0; i < nargs; i++) {
		fprintf(out, e->args[i] < 0x10000 ? "%s%lu" : "%s%#lx", i ? ", " : "", e->args[i]);
		if (!hit && (hit = watched(e->args[i], what, sizeof(what))))
			which = i + 1;
	}
	fprintf(out, ") by thread %d failed with EFAULT", (int)tid);
	if (hit)
		fprintf(out, ": argument %d points into %s (watched: its page is closed to the kernel too)\n", which,
			hit);
	else
		fprintf(out, " (no argument points into a watched page)\n");
	fflush(out);
}

static struct entered *slot(pid_t tid, bool make)
{
	struct entered *free_ = NULL;

	for (int i = 0; i < THREADS; i++) {
		if (entered[i].tid == tid)
			return &entered[i];
		if (!entered[i].tid && !free_)
			free_ = &entered[i];
	}
	if (make && free_)
		free_->tid = tid;
	return make ? free_ : NULL;
}

static void on_syscall(pid_t tid)
{
	struct __ptrace_syscall_info si;
	struct entered *e = slot(tid, true);

	if (!e || ptrace(PTRACE_GET_SYSCALL_INFO, tid, (void *)sizeof(si), &si) <= 0)
		return;
	if (si.op == PTRACE_SYSCALL_INFO_ENTRY) {
		e->in = true;
		e->nr = si.entry.nr;
		for (int i = 0; i < 6; i++)
			e->args[i] = si.entry.args[i];
	} else if (si.op == PTRACE_SYSCALL_INFO_EXIT && e->in) {
		if (si.exit.is_error && si.exit.rval == -EFAULT)
			report(tid, e);
		e->in = false;
	}
}

/* Signals mpkit gets go on to PROG (the terminal's reach both). */
static void pass_on(int sig)
{
	if (prog > 0)
		kill(prog, sig);
}

/* Wait for PROG's threads, reporting, until PROG ends: its status. */
static int trace(void)
{
	int st;

	for (;;) {
		pid_t t = waitpid(-1, &st, __WALL);
		if (t < 0) {
			if (errno == EINTR)
				continue;
			return CLI_EXEC_FAILED;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			struct entered *e = slot(t, false);
			if (e)
				e->tid = 0, e->in = false;
			if (t == prog)
				return st;
			continue;
		}
		if (!WIFSTOPPED(st))
			continue;
		int sig = WSTOPSIG(st), inject = 0;
		siginfo_t info;
		if (sig == (SIGTRAP | 0x80))
			on_syscall(t);
		else if (st >> 16)
			; /* clone, exec: events, no signal */
		else if (sig == SIGSTOP && !slot(t, false))
			slot(t, true); /* a new thread's first stop */
		else if (ptrace(PTRACE_GETSIGINFO, t, NULL, &info) == 0)
			inject = sig; /* a signal for PROG */
		ptrace(PTRACE_SYSCALL, t, NULL, (void *)(long)inject);
	}
}

int watch_traced(char **argv, const char *output)
{
	int fds[2], st;
	char num[16];

	out = stderr;
	if (output && !(out = fopen(output, "ae"))) {
		fprintf(stderr, "mpkit watch: %s: %s\n", output, strerror(errno));
		return CLI_EXEC_FAILED;
	}
	if (pipe2(fds, O_CLOEXEC)) {
		fprintf(stderr, "mpkit watch: pipe: %s\n", strerror(errno));
		return CLI_EXEC_FAILED;
	}
	fflush(NULL);
	prog = fork();
	if (prog < 0) {
		fprintf(stderr, "mpkit watch: fork: %s\n", strerror(errno));
		return CLI_EXEC_FAILED;
	}
	if (prog == 0) {
		/* The helper's end of the pipe survives the exec. */
		int w = fcntl(fds[1], F_DUPFD, 3);
		snprintf(num, sizeof(num), "%d", w);
		setenv("MPKIT_WATCH_FD", num, 1);
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL)) {
			fprintf(stderr, "mpkit watch --syscalls: ptrace: %s\n", strerror(errno));
			_exit(CLI_EXEC_FAILED);
		}
		raise(SIGSTOP); /* until the tracer has set its options */
		_exit(cli_exec_preloaded("watch", "MPKIT_WATCH_LIB", "libmpkit-watch.so", argv));
	}
	close(fds[1]);
	table_fd = fds[0];
	fcntl(table_fd, F_SETFL, O_NONBLOCK);
	if (waitpid(prog, &st, __WALL) != prog || !WIFSTOPPED(st)) /* the raise() */
		return WIFEXITED(st) ? WEXITSTATUS(st) : CLI_EXEC_FAILED;
	ptrace(PTRACE_SETOPTIONS, prog, NULL,
	       (void *)(long)(PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL));
	struct sigaction sa = { .sa_handler = pass_on };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGINT, SIG_IGN); /* the terminal's reach PROG as well */
	signal(SIGQUIT, SIG_IGN);
	slot(prog, true);
	ptrace(PTRACE_SYSCALL, prog, NULL, NULL);
	st = trace();
	if (out != stderr)
		fclose(out);
	if (WIFSIGNALED(st)) {
		/* PROG's death, as a shell would see it from PROG itself
		 * (PROG dumped its core already, if any). */
		struct rlimit none = { 0, 0 };
		setrlimit(RLIMIT_CORE, &none);
		signal(WTERMSIG(st), SIG_DFL);
		raise(WTERMSIG(st));
		return 128 + WTERMSIG(st);
	}
	return WEXITSTATUS(st);
}
