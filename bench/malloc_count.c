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
 * are counted too: what a sealed pair costs beyond its instructions;
 * and the steps in each file (the allocator's library, libc, ld.so):
 * where they go.
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

#define MAX_CODE 64

/* The child's executable mappings, each with the index of its file
 * among c->mod (-1: the loop program's own code, not counted). */
struct code {
	unsigned long lo[MAX_CODE], hi[MAX_CODE];
	int mod[MAX_CODE];
	int n;
};

/* The module called name (its file's base name) in c->mod[], added when
 * new; the last one takes what does not fit. */
static int module(struct mb_count *c, const char *name)
{
	int i = 0;

	while (i < c->nmod && strcmp(c->mod[i], name))
		i++;
	if (i == c->nmod && i < MB_MAX_MODS)
		snprintf(c->mod[c->nmod++], sizeof(c->mod[0]), "%s", name);
	return i < MB_MAX_MODS ? i : MB_MAX_MODS - 1;
}

static int code_of(pid_t pid, struct code *o, struct mb_count *c)
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
	int own = 0;
	while (fgets(line, sizeof(line), f) && o->n < MAX_CODE) {
		unsigned long lo, hi;
		char perm[8];
		int at = 0;
		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &lo, &hi, perm, &at) != 3 || perm[2] != 'x')
			continue;
		char *name = line + at;
		name[strcspn(name, "\n")] = 0;
		o->lo[o->n] = lo, o->hi[o->n] = hi;
		if (!strcmp(name, exe))
			o->mod[o->n++] = -1, own = 1;
		else
			o->mod[o->n++] = module(c, strrchr(name, '/') ? strrchr(name, '/') + 1 : *name ? name : "[anon]");
	}
	fclose(f);
	return own ? 0 : (errno = ENOENT, -1);
}

/* The module index of address a: -1 for the loop's own code. */
static int where(const struct code *o, struct mb_count *c, unsigned long a)
{
	for (int i = 0; i < o->n; i++)
		if (a >= o->lo[i] && a < o->hi[i])
			return o->mod[i];
	return module(c, "(unmapped at the start)");
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
	struct code o;
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
	if (code_of(pid, &o, c)) {
		failed(c, "reading the loop's maps");
		goto out;
	}
	for (;;) {
		struct user_regs_struct r;
		if (ptrace(PTRACE_GETREGS, pid, NULL, &r)) {
			failed(c, "PTRACE_GETREGS");
			goto out;
		}
		int m = where(&o, c, r.rip);
		if (m >= 0) {
			errno = 0;
			unsigned long w = (unsigned long)ptrace(PTRACE_PEEKTEXT, pid, (void *)r.rip, NULL);
			c->insns++;
			c->modn[m]++;
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
	for (int i = 0; i < b.nmod; i++) {
		double x = b.modn[i];
		for (int j = 0; j < a.nmod; j++)
			if (!strcmp(a.mod[j], b.mod[i]))
				x -= a.modn[j];
		if (x / n >= 0.05) /* what a pair runs, not a one-off */
			c->modn[c->nmod] = x / n, snprintf(c->mod[c->nmod++], sizeof(c->mod[0]), "%s", b.mod[i]);
	}
	return 0;
}
