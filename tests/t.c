/* SPDX-License-Identifier: MIT */
/*
 * The test kit (t.h), compiled once and linked into every test program:
 * results, the child runner, provoking faults, files.
 */
#include "t.h"

#include <fcntl.h>
#include <poll.h>

int t_failures;

void t_skip(const char *why)
{
	printf("skip: %s\n", why);
	exit(T_SKIP);
}

int t_done(void)
{
	if (t_failures) {
		fprintf(stderr, "%d check(s) failed\n", t_failures);
		return 1;
	}
	return 0;
}

int t_backend(void)
{
	int b = mpk_backend();
	REQUIRE(b == MPK_BACKEND_HW || b == MPK_BACKEND_SOFT);
	return b;
}

void t_need_hw(void)
{
	if (t_backend() != MPK_BACKEND_HW)
		t_skip("needs hardware protection keys (runs in the VM suite)");
}

void t_force_soft(void)
{
	setenv("MPKIT_BACKEND", "soft", 1);
	REQUIRE(mpk_backend() == MPK_BACKEND_SOFT);
}

bool t_dropin_loaded(void)
{
	char line[512];
	bool found = false;
	FILE *f = fopen("/proc/self/maps", "re");

	REQUIRE(f);
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, "/libmpkit-malloc.so") != NULL;
	fclose(f);
	return found;
}

/* ---- the child runner ---- */

/* Where the SIGSEGV recorder writes what it caught (the child's end). */
static volatile sig_atomic_t t_pipe_fd = -1;

void t_fault_record(const struct t_fault *f)
{
	if (write(t_pipe_fd, f, sizeof(*f)) < 0)
		_exit(3);
}

static void t_segv_recorder(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	struct t_fault f = { 1, si->si_code, (int)si->si_pkey, si->si_addr, 0 };
	t_fault_record(&f);
	_exit(42);
}

void t_segv_recorder_install(void)
{
	struct sigaction sa, cur;
	if (!sigaction(SIGSEGV, NULL, &cur) && cur.sa_sigaction == t_segv_recorder)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = t_segv_recorder;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sa, NULL);
}

void t_segv_handler_install(void (*fn)(int, siginfo_t *, void *))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fn;
	sa.sa_flags = SA_SIGINFO;
	REQUIRE(sigaction(SIGSEGV, &sa, NULL) == 0);
}

mpk_domain *t_hw_domain(const char *name, int *key)
{
	t_need_hw();
	mpk_domain *d = mpk_domain_create(name, MPK_RW, 0);
	REQUIRE(d);
	*key = mpk_domain_key(d);
	CHECK(*key > 0 && *key < 16);
	return d;
}

/* A growing NUL-terminated capture. */
struct t_buf {
	char *s;
	size_t len, cap;
};

/* Read what fd has now into b; 0 at its end (fd closed then). */
static int t_buf_read(struct t_buf *b, int fd)
{
	if (b->cap - b->len < 4096) {
		b->cap = b->cap ? 2 * b->cap : 8192;
		REQUIRE((b->s = realloc(b->s, b->cap)));
		b->s[b->len] = 0; /* an empty capture reads "", not old heap bytes */
	}
	ssize_t n = read(fd, b->s + b->len, b->cap - 1 - b->len);
	if (n < 0 && errno == EINTR)
		return 1;
	if (n > 0) {
		b->len += (size_t)n;
		b->s[b->len] = 0;
		return 1;
	}
	close(fd);
	return 0;
}

static char *t_buf_done(struct t_buf *b)
{
	if (!b->s)
		REQUIRE((b->s = calloc(1, 1)));
	return b->s;
}

struct t_child t_child(void (*fn)(void *), void *arg, unsigned flags)
{
	struct t_child c = { 0 };
	struct t_buf out = { 0 }, err = { 0 };
	int fault[2] = { -1, -1 }, po[2] = { -1, -1 }, pe[2] = { -1, -1 };

	if (flags & T_CHILD_FAULT)
		REQUIRE(pipe2(fault, O_CLOEXEC) == 0);
	if (flags & T_CHILD_STDOUT)
		REQUIRE(pipe(po) == 0);
	if (flags & T_CHILD_STDERR)
		REQUIRE(pipe(pe) == 0);
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		if (flags & T_CHILD_FAULT) {
			close(fault[0]);
			t_pipe_fd = fault[1];
			t_segv_recorder_install();
		}
		if (flags & T_CHILD_STDOUT) {
			dup2(po[1], STDOUT_FILENO);
			if (flags & T_CHILD_MERGED)
				dup2(po[1], STDERR_FILENO);
			close(po[0]);
			close(po[1]);
		}
		if (flags & T_CHILD_STDERR) {
			dup2(pe[1], STDERR_FILENO);
			close(pe[0]);
			close(pe[1]);
		}
		if (flags & T_CHILD_CHECKS)
			t_failures = 0;
		fn(arg);
		fflush(NULL);
		int code = flags & T_CHILD_CHECKS ? t_done() : 0;
		if (flags & T_CHILD_EXIT)
			exit(code);
		_exit(code);
	}
	/* Both pipes at once: a child that fills one while the test
	 * waits on the other would never end. */
	struct pollfd p[2] = { { po[0], POLLIN, 0 }, { pe[0], POLLIN, 0 } };
	if (flags & T_CHILD_STDOUT)
		close(po[1]);
	if (flags & T_CHILD_STDERR)
		close(pe[1]);
	while (p[0].fd >= 0 || p[1].fd >= 0) {
		if (poll(p, 2, -1) < 0) {
			REQUIRE(errno == EINTR);
			continue;
		}
		if (p[0].revents && !t_buf_read(&out, p[0].fd))
			p[0].fd = -1;
		if (p[1].revents && !t_buf_read(&err, p[1].fd))
			p[1].fd = -1;
	}
	if (flags & T_CHILD_FAULT) {
		close(fault[1]);
		if (read(fault[0], &c.fault, sizeof(c.fault)) != (ssize_t)sizeof(c.fault))
			memset(&c.fault, 0, sizeof(c.fault));
		close(fault[0]);
	}
	REQUIRE(waitpid(pid, &c.status, 0) == pid);
	c.pid = pid;
	c.signal = WIFSIGNALED(c.status) ? WTERMSIG(c.status) : 0;
	c.exit_code = c.signal ? -c.signal : WEXITSTATUS(c.status);
	c.fault.exit_code = c.exit_code;
	if (flags & T_CHILD_STDOUT)
		c.out = t_buf_done(&out);
	if (flags & T_CHILD_STDERR)
		c.err = t_buf_done(&err);
	return c;
}

void t_child_free(struct t_child *c)
{
	free(c->out);
	free(c->err);
	c->out = c->err = NULL;
}

int t_child_shell_status(const struct t_child *c)
{
	return c->signal ? 128 + c->signal : c->exit_code;
}

/* The child of t_child_ret(). */
struct t_ret_call {
	int (*fn)(void *);
	void *arg;
};

static void t_ret_main(void *call)
{
	const struct t_ret_call *k = call;
	int code = k->fn(k->arg);
	fflush(NULL);
	_exit(code);
}

struct t_child t_child_ret(int (*fn)(void *), void *arg, unsigned flags)
{
	struct t_ret_call k = { fn, arg };
	return t_child(t_ret_main, &k, flags & ~(unsigned)(T_CHILD_CHECKS | T_CHILD_EXIT));
}

int t_child_status(int (*fn)(void *), void *arg)
{
	struct t_child c = t_child_ret(fn, arg, 0);
	return t_child_shell_status(&c);
}

void t_exec_main(void *exec)
{
	const struct t_exec *x = exec;

	for (char *const *e = x->env; e && *e; e++)
		if (strchr(*e, '='))
			putenv(*e);
		else
			unsetenv(*e);
	if (x->out_path) {
		int fd = open(x->out_path, O_WRONLY);
		if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0)
			_exit(126);
	}
	const char *path = x->path ? x->path : x->argv[0];
	if (strchr(path, '/'))
		execv(path, x->argv);
	else
		execvp(path, x->argv);
	_exit(127);
}

static void t_call_void(void *fn)
{
	(*(void (**)(void))fn)();
}

void t_in_child(void (*fn)(void), const char *what)
{
	struct t_child c = t_child(t_call_void, &fn, T_CHILD_CHECKS | T_CHILD_EXIT);
	if (c.exit_code)
		t_fail("%s: status 0x%x", what, c.status);
}

void (*t_soft_scenario)(void);

void t_soft_variant(void)
{
	t_force_soft();
	t_soft_scenario();
}

int t_both_backends(void (*scenario)(void))
{
	t_soft_scenario = scenario;
	t_in_child(t_soft_variant, "soft variant");
	if (t_backend() == MPK_BACKEND_HW)
		scenario();
	return t_done();
}

/* ---- provoking faults ---- */

void t_touch_read(void *p)
{
	(void)*(volatile unsigned char *)p;
}

void t_touch_write(void *p)
{
	*(volatile unsigned char *)p = 0x5a;
}

struct t_fault t_run_child(void (*fn)(void *), void *arg)
{
	return t_child(fn, arg, T_CHILD_FAULT).fault;
}

struct t_fault t_read_in_child(void *p)
{
	return t_run_child(t_touch_read, p);
}

struct t_fault t_write_in_child(void *p)
{
	return t_run_child(t_touch_write, p);
}

int t_child_stderr(void (*fn)(void *), void *arg, char *buf, size_t size)
{
	struct t_child c = t_child(fn, arg, T_CHILD_STDERR);
	snprintf(buf, size, "%s", c.err);
	t_child_free(&c);
	return c.status;
}

/* ---- files and the environment ---- */

int t_read_file(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = 0;
	return 1;
}

int t_thread_sleeping(pid_t tid)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	if (!t_read_file(path, buf, sizeof(buf)))
		return 0;
	char *e = strrchr(buf, ')');
	return e && e[1] == ' ' && e[2] == 'S';
}

void t_setenv(const char *name, const char *value)
{
	if (value)
		REQUIRE(setenv(name, value, 1) == 0);
	else
		REQUIRE(unsetenv(name) == 0);
}

const char *t_show(const char *v)
{
	return v ? v : "(unset)";
}
