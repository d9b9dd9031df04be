/* SPDX-License-Identifier: MIT */
/*
 * `mpkit run [--sealed|--open] [--stats] [--wipe] [--debug] [--] PROG ARGS`:
 * PROG with libmpkit-malloc.so preloaded (src/malloc/), every malloc() of it
 * on an mpkit heap, its reports read through a socket (MPKIT_REPORT=fd:N) and
 * symbolized (symbolize.c); and the preload-and-exec step it shares with
 * `mpkit watch`.  A program the preload cannot reach (static, setuid,
 * setgid, file capabilities) is refused.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "mpkit.h"
#include "cli.h"

int cli_exec_preloaded(const char *cmd, const char *var, const char *name, char **argv)
{
	char path[PATH_MAX + 64], *preload = NULL;
	const char *lib = getenv(var), *old = getenv("LD_PRELOAD");

	if (!lib || !*lib) {
		if (cli_helper(cmd, name, path, sizeof(path)))
			return CLI_EXEC_FAILED;
		lib = path;
	} else if (access(lib, R_OK)) {
		fprintf(stderr, "mpkit %s: %s=%s: %s\n", cmd, var, lib, strerror(errno));
		return CLI_EXEC_FAILED;
	}
	if (strpbrk(lib, " :")) { /* LD_PRELOAD's separators */
		fprintf(stderr, "mpkit %s: %s: a path with a space or a colon cannot be preloaded\n", cmd, lib);
		return CLI_EXEC_FAILED;
	}
	if ((old && *old ? asprintf(&preload, "%s %s", lib, old) : asprintf(&preload, "%s", lib)) < 0) {
		fprintf(stderr, "mpkit %s: %s\n", cmd, strerror(ENOMEM));
		return CLI_EXEC_FAILED;
	}
	setenv("LD_PRELOAD", preload, 1);
	execvp(argv[0], argv);
	int err = errno;
	free(preload);
	fprintf(stderr, "mpkit %s: cannot run %s: %s\n", cmd, argv[0], strerror(err));
	return err == ENOENT || err == ENOTDIR ? CLI_EXEC_NOT_FOUND : CLI_EXEC_CANNOT_RUN;
}

/* PROG as execvp() would find it, in path: false if not found (execvp
 * then says so). */
static bool find_prog(const char *prog, char *path, size_t size)
{
	if (strchr(prog, '/')) {
		snprintf(path, size, "%s", prog);
		return !access(path, F_OK);
	}
	const char *dirs = getenv("PATH");
	for (const char *d = dirs && *dirs ? dirs : "/usr/local/bin:/usr/bin:/bin"; d;) {
		const char *colon = strchr(d, ':');
		int n = colon ? (int)(colon - d) : (int)strlen(d);
		snprintf(path, size, "%.*s%s%s", n, d, n ? "/" : "", prog);
		if (!access(path, X_OK))
			return true;
		d = colon ? colon + 1 : NULL;
	}
	return false;
}

/* Whether a static program has the drop-in linked in (libmpkit-malloc.o):
 * its messages' prefix is in the file. */
static bool carries_dropin(int fd, off_t size)
{
	static const char mark[] = "libmpkit-malloc: ";
	void *m = size > 0 ? mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;

	if (m == MAP_FAILED)
		return false;
	bool in = memmem(m, (size_t)size, mark, sizeof(mark) - 1) != NULL;
	munmap(m, (size_t)size);
	return in;
}

/* Why the preload cannot reach PROG, or NULL: the dynamic loader is what
 * loads it, and it ignores LD_PRELOAD in a secure-execution program. */
static const char *unreachable(const char *path)
{
	struct stat st;
	Elf64_Ehdr eh;
	bool interp = false;

	if (stat(path, &st))
		return NULL;
	if (st.st_mode & S_ISUID)
		return "it is setuid: the dynamic loader ignores LD_PRELOAD for it";
	if ((st.st_mode & S_ISGID) && (st.st_mode & S_IXGRP))
		return "it is setgid: the dynamic loader ignores LD_PRELOAD for it";
	if (getxattr(path, "security.capability", NULL, 0) > 0)
		return "it has file capabilities (setcap): the dynamic loader ignores LD_PRELOAD for it";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	bool elf = pread(fd, &eh, sizeof(eh), 0) == (ssize_t)sizeof(eh) && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
		   eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr);
	for (unsigned i = 0; elf && i < eh.e_phnum && !interp; i++) {
		Elf64_Phdr ph;
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) != (ssize_t)sizeof(ph))
			break;
		interp = ph.p_type == PT_INTERP;
	}
	/* A script or another format: its interpreter is judged when it runs. */
	const char *why = elf && !interp && !carries_dropin(fd, st.st_size)
				  ? "it is statically linked: no dynamic loader, no LD_PRELOAD, its own "
				    "malloc() (link libmpkit-malloc.o into it instead: docs/malloc.md)"
				  : NULL;
	close(fd);
	return why;
}

static pid_t child;

static void forward(int sig)
{
	if (child > 0)
		kill(child, sig);
}

/* Copy the child's reports from fd to stderr, symbolized, until it exits
 * (and what it wrote before is read); its wait status. */
static int filter(int fd)
{
	char buf[4096], line[8192];
	size_t len = 0;
	bool fault_trace = false, done = false;
	int st = 0;

	while (!done) {
		struct pollfd p = { fd, POLLIN, 0 };
		/* A grandchild may hold the socket open: the child's exit ends
		 * it, once the socket has nothing more to read. */
		int r = poll(&p, 1, 100);
		if (r == 0 || (r < 0 && errno == EINTR)) {
			pid_t w = waitpid(child, &st, WNOHANG);
			done = w == child || (w < 0 && errno == ECHILD);
			continue;
		}
		ssize_t k = r > 0 ? read(fd, buf, sizeof(buf)) : -1;
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			while (waitpid(child, &st, 0) < 0 && errno == EINTR)
				;
			done = true;
			continue;
		}
		for (ssize_t i = 0; i < k; i++) {
			if (buf[i] != '\n' && len < sizeof(line) - 1) {
				line[len++] = buf[i];
				continue;
			}
			line[len] = 0;
			cli_symbolize_line(stderr, line, &fault_trace);
			fflush(stderr);
			len = 0;
		}
	}
	if (len) {
		line[len] = 0;
		cli_symbolize_line(stderr, line, &fault_trace);
	}
	cli_symbolize_end();
	return st;
}

/* PROG in a child, its reports symbolized on the way to stderr; PROG's
 * exit status, or its death by the same signal. */
static int run_filtered(char **argv)
{
	int p[2];
	char spec[32];

	/* A socket, not a pipe: a report written after mpkit stopped reading
	 * (by a child PROG left behind) fails with EPIPE and goes to stderr,
	 * where a pipe would kill its writer with SIGPIPE. */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p)) {
		fprintf(stderr, "mpkit run: socketpair: %s\n", strerror(errno));
		return CLI_EXEC_FAILED;
	}
	fflush(NULL);
	child = fork();
	if (child < 0) {
		fprintf(stderr, "mpkit run: fork: %s\n", strerror(errno));
		return CLI_EXEC_FAILED;
	}
	if (!child) {
		/* Out of the way of the descriptors a program opens first. */
		int fd = fcntl(p[1], F_DUPFD, 100);
		if (fd < 0)
			_exit(CLI_EXEC_FAILED);
		snprintf(spec, sizeof(spec), "fd:%d", fd);
		setenv("MPKIT_REPORT", spec, 1);
		_exit(cli_exec_preloaded("run", "MPKIT_MALLOC_LIB", "libmpkit-malloc.so", argv));
	}
	close(p[1]);
	struct sigaction ign = { .sa_handler = SIG_IGN }, fwd = { .sa_handler = forward };
	/* ^C and ^\ reach the program from the terminal; a kill of mpkit's
	 * pid is passed on to it. */
	sigaction(SIGINT, &ign, NULL);
	sigaction(SIGQUIT, &ign, NULL);
	sigaction(SIGTERM, &fwd, NULL);
	sigaction(SIGHUP, &fwd, NULL);
	int st = filter(p[0]);
	close(p[0]);
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	/* Die as PROG died, for the shell and whoever waits (no core of
	 * mpkit's own: PROG's was dumped, where the system dumps cores). */
	int sig = WTERMSIG(st);
	struct rlimit none = { 0, 0 };
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	setrlimit(RLIMIT_CORE, &none);
	sigaction(sig, &dfl, NULL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	return 128 + sig;
}

static int cmd_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "sealed", no_argument, NULL, 's' },
		{ "open", no_argument, NULL, 'o' },
		{ "stats", no_argument, NULL, 'S' },
		{ "wipe", no_argument, NULL, 'W' },
		{ "debug", no_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *meta = NULL;
	int o;

	/* "+": the first operand is PROG, and what follows it is PROG's */
	while ((o = cli_getopt(&cli_run, argc, argv, "+h", longopts)) != -1) {
		if (o == 'h')
			return cli_help(&cli_run);
		if (o == '?')
			return 2;
		if (o == 'S' || o == 'W' || o == 'D') {
			setenv(o == 'S' ? "MPKIT_MALLOC_STATS" : o == 'W' ? "MPKIT_MALLOC_WIPE" : "MPKIT_MALLOC_DEBUG", "1", 1);
			continue;
		}
		const char *m = o == 's' ? "closed" : "open";
		if (meta && strcmp(meta, m))
			return cli_conflict(&cli_run, "--sealed", "--open");
		meta = m;
	}
	if (optind >= argc) {
		cli_usage(&cli_run, stderr);
		return 2;
	}
	if (meta)
		setenv("MPKIT_HEAP_META", meta, 1);
	/* What would make the drop-in fall back to its unprotected internal
	 * allocator in PROG (a bad MPKIT_* variable, hw asked for and
	 * missing) stops here instead. */
	if (mpk_init()) {
		fprintf(stderr, "mpkit run: mpkit cannot start: %s (mpkit info says why)\n", strerror(errno));
		return CLI_EXEC_FAILED;
	}
	char path[PATH_MAX];
	const char *why = find_prog(argv[optind], path, sizeof(path)) ? unreachable(path) : NULL;
	if (why) {
		fprintf(stderr, "mpkit run: %s: %s; it would run unprotected\n", path, why);
		return CLI_EXEC_FAILED;
	}
	/* Reports the user sends elsewhere go there, as they are. */
	if (getenv("MPKIT_REPORT") && *getenv("MPKIT_REPORT"))
		return cli_exec_preloaded("run", "MPKIT_MALLOC_LIB", "libmpkit-malloc.so", argv + optind);
	return run_filtered(argv + optind);
}

const struct cli_command cli_run = {
	"run", cmd_run, "[--sealed|--open] [--stats] [--wipe] [--debug] [--] PROG [ARGS]",
	"PROG with its malloc() on an mpkit heap, the metadata closed between calls",
	"PROG's malloc(), free() and the rest of the C library's allocation calls\n"
	"(C++ new and delete too) go to an mpkit heap (libmpkit-malloc.so).  Options\n"
	"come before PROG: what follows PROG is PROG's own (-- is optional).\n"
	"  --sealed  the heap's metadata is closed between calls (MPKIT_HEAP_META=closed)\n"
	"  --open    it stays open (MPKIT_HEAP_META=open); not with --sealed\n"
	"  default   MPKIT_HEAP_META as set, else auto: sealed on hw, where an open\n"
	"            is 2 WRPKRU; open on soft, where each open is 2 mprotect()\n"
	"            calls (python3 ran many times slower sealed: mpkit-run(1))\n"
	"  --stats   at exit, PROG's calls, metadata opens per call, bytes live, and\n"
	"            bytes mapped now and at the peak, on stderr (MPKIT_MALLOC_STATS=1)\n"
	"  --wipe    free() zeroes each block (MPKIT_MALLOC_WIPE=1; not by default)\n"
	"  --debug   misuse reports say where the block was allocated and freed\n"
	"            (MPKIT_MALLOC_DEBUG=1: a stack kept per block, slower)\n"
	"Reports (heap misuse, faults) come on stderr with each frame as its\n"
	"function and FILE:LINE (PROG built with -g; addr2line); with MPKIT_REPORT\n"
	"set they go there as module+offset instead (mpkit symbolize reads them).\n"
	"A static, setuid, setgid or setcap PROG is refused: the preload cannot\n"
	"reach it.\n"
	"  MPKIT_MALLOC_LIB=PATH  the library to preload, instead of libmpkit-malloc.so\n"
	"                         in mpkit's helpers' directory\n"
	"PROG's children inherit the preload (LD_PRELOAD).\n"
	"exit status: PROG's (or its death by the same signal); 125 no library to\n"
	"preload, mpkit cannot start (a bad MPKIT_* variable) or PROG out of the\n"
	"preload's reach, 126 PROG cannot run, 127 PROG not found, 2 usage\n",
};
