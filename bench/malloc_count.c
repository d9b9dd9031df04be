/* SPDX-License-Identifier: MIT */
/*
 * `mpkit bench malloc --count`: the instructions of a malloc+free pair of
 * a cached small block, counted by single-stepping (ptrace) the loop of
 * bench/mw_count.c under an allocator, as the real programs run under
 * it (LD_PRELOAD).  No performance counter is needed (a VM often has
 * none, and this machine's perf says "not supported"); a step is one
 * instruction retired in user space.  Counted are the steps whose
 * address is outside the loop program's own code, between its two
 * stops: the allocator's instructions and whatever they call (libc,
 * the dynamic linker's TLS lookup).  Two runs, of a few pairs and of
 * many more, and their difference divided by the pairs between them:
 * the warm-up, the stops' own code and any one-off work cancel out.
 * The system calls (SYSCALL) and PKRU writes (WRPKRU) among the steps
 * are counted too: what a sealed pair costs beyond its instructions.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "malloc.h"

#define MAX_OWN 16

/* The loop program's own code: its executable mappings. */
struct own {
	unsigned long lo[MAX_OWN], hi[MAX_OWN];
	int n;
};

static int own_code(pid_t pid, struct own *o)
{
	char path[64], exe[4096], line[4096 + 128];
	ssize_t k;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if ((k = readlink(path, exe, sizeof(exe) - 1)) < 0)
		return -1;
	exe[k] = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	o->n = 0;
	while (fgets(line, sizeof(line), f) && o->n < MAX_OWN) {
		unsigned long lo, hi;
		char perm[8];
		const char *name = strchr(line, '/');
		if (!name || sscanf(line, "%lx-%lx %7s", &lo, &hi, perm) != 3 || perm[2] != 'x')
			continue;
		if (!strncmp(name, exe, (size_t)k) && name[k] == '\n')
			o->lo[o->n] = lo, o->hi[o->n++] = hi;
	}
	fclose(f);
	return o->n ? 0 : (errno = ENOENT, -1);
}

static int is_own(const struct own *o, unsigned long a)
{
	for (int i = 0; i < o->n; i++)
		if (a >= o->lo[i] && a < o->hi[i])
			return 1;
	return 0;
}

static int failed(struct mb_count *c, const char *what)
{
	if (!c->why[0])
		snprintf(c->why, sizeof(c->why), "%s: %s", what, strerror(errno));
	return -1;
}

/* Waits for the traced child's next stop: its signal, or -1 when it
 * ended (the reason in c). */
static int next_stop(pid_t pid, struct mb_count *c)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return failed(c, "waitpid");
	if (WIFSTOPPED(st))
		return WSTOPSIG(st);
	errno = 0;
	snprintf(c->why, sizeof(c->why), "the counted loop ended early (%s %d)",
		 WIFEXITED(st) ? "exit status" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	return -1;
}

#if defined(__x86_64__)
/* One run of pairs: the steps outside the loop program between its two
 * stops into c (added). */
static int traced(const char *prog, char *const envp[], long size, long pairs, struct mb_count *c)
{
	char a1[32], a2[32];
	struct own o;
	int sig = 0;

	snprintf(a1, sizeof(a1), "%ld", size);
	snprintf(a2, sizeof(a2), "%ld", pairs);
	pid_t pid = fork();
	if (pid < 0)
		return failed(c, "fork");
	if (pid == 0) {
		int fd = open("/dev/null", O_RDWR);
		if (fd < 0 || dup2(fd, 0) < 0 || dup2(fd, 1) < 0 || ptrace(PTRACE_TRACEME, 0, NULL, NULL))
			_exit(126);
		execve(prog, (char *const[]){ (char *)prog, a1, a2, NULL }, envp);
		_exit(127);
	}
	/* after execve: a SIGTRAP; then on to the first SIGSTOP, passing
	 * any other signal on */
	for (int s; (s = next_stop(pid, c)) != SIGSTOP; sig = s == SIGTRAP ? 0 : s)
		if (s < 0 || ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig))
			goto out;
	sig = 0;
	if (own_code(pid, &o)) {
		failed(c, "reading the loop's maps");
		goto out;
	}
	for (;;) {
		struct user_regs_struct r;
		if (ptrace(PTRACE_GETREGS, pid, NULL, &r)) {
			failed(c, "PTRACE_GETREGS");
			goto out;
		}
		if (!is_own(&o, r.rip)) {
			errno = 0;
			unsigned long w = (unsigned long)ptrace(PTRACE_PEEKTEXT, pid, (void *)r.rip, NULL);
			c->insns++;
			c->syscalls += (w & 0xffff) == 0x050f;
			c->wrpkru += (w & 0xffffff) == 0xef010f;
		}
		if (ptrace(PTRACE_SINGLESTEP, pid, NULL, (void *)(long)sig)) {
			failed(c, "PTRACE_SINGLESTEP");
			goto out;
		}
		int s = next_stop(pid, c);
		if (s < 0)
			goto out;
		if (s == SIGSTOP)
			break;
		sig = s == SIGTRAP ? 0 : s;
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return 0;
out:
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}
#else
static int traced(const char *prog, char *const envp[], long size, long pairs, struct mb_count *c)
{
	(void)prog, (void)envp, (void)size, (void)pairs;
	errno = ENOSYS;
	return failed(c, "counting by single-stepping is written for x86-64");
}
#endif

int mb_count(const char *prog, char *const envp[], long size, long few, long many, struct mb_count *c)
{
	struct mb_count a = { 0 }, b = { 0 };

	memset(c, 0, sizeof(*c));
	if (traced(prog, envp, size, few, &a) || traced(prog, envp, size, many, &b)) {
		snprintf(c->why, sizeof(c->why), "%s", a.why[0] ? a.why : b.why);
		return -1;
	}
	double n = (double)(many - few);
	c->insns = (b.insns - a.insns) / n;
	c->syscalls = (b.syscalls - a.syscalls) / n;
	c->wrpkru = (b.wrpkru - a.wrpkru) / n;
	return 0;
}
