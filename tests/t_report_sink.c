/* SPDX-License-Identifier: MIT */
/*
 * mpk_report_sink() and mpk_report_write() (issue 34, item 3):
 *   - a sink gets each report whole, in one call with its arg: a double
 *     free under the default misuse handler (the report and its
 *     backtrace), and a fault under the default fault handler (from the
 *     signal handler); nothing of them reaches stderr;
 *   - mpk_report_write() reaches the sink, and with none stderr;
 *     mpk_report_sink(NULL, NULL) sends reports back to stderr;
 *   - bad arguments: a sink's arg without fn, text NULL with a length:
 *     EINVAL, the sink in place unchanged.
 * The sink is async-signal-safe (it copies into a pipe: write()).
 */
#include "t.h"

static int pipe_fd[2];

struct got {
	int calls;
	size_t len;
};

/* What the child's sink saw goes to the parent through the pipe: each
 * call's text, then a line "calls=N". */
static void sink(const char *text, size_t len, void *arg)
{
	struct got *g = arg;
	char line[] = "\ncalls=0\n";

	g->calls++;
	g->len += len;
	line[7] = (char)('0' + g->calls % 10);
	if (write(pipe_fd[1], text, len) < 0 || write(pipe_fd[1], line, sizeof(line) - 1) < 0)
		return;
}

static struct got got;
static mpk_domain *d;

static void double_free(void *arg)
{
	(void)arg;
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h);
	void *p = mpk_heap_malloc(h, 24);
	REQUIRE(p && mpk_heap_free(h, p) == 0);
	REQUIRE(mpk_report_sink(sink, &got) == 0);
	(void)mpk_heap_free(h, p); /* reported and aborted */
	_exit(0);
}

static void fault(void *arg)
{
	(void)arg;
	unsigned char *p = mpk_alloc(d, 4096);
	REQUIRE(p);
	REQUIRE(mpk_fault_handler_install(NULL, NULL) == 0);
	REQUIRE(mpk_report_sink(sink, &got) == 0);
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	t_touch_write(p + 8);
	_exit(0);
}

/* The child's death, stderr, and what its sink passed on. */
static void in_child(void (*fn)(void *), const char *what, const char *want)
{
	static char buf[65536];
	REQUIRE(pipe(pipe_fd) == 0);
	struct t_child c = t_child(fn, NULL, T_CHILD_STDERR);
	close(pipe_fd[1]);
	size_t len = 0;
	for (ssize_t k; (k = read(pipe_fd[0], buf + len, sizeof(buf) - 1 - len)) > 0;)
		len += (size_t)k;
	buf[len] = 0;
	close(pipe_fd[0]);
	if (c.signal != SIGABRT)
		t_fail("%s: child status %#x, want SIGABRT", what, c.status);
	if (!strstr(buf, want) || !strstr(buf, "mpkit:     #0 0x"))
		t_fail("%s: the sink lacks \"%s\" or its backtrace:\n%s", what, want, buf);
	if (!strstr(buf, "\ncalls=1\n") || strstr(buf, "calls=2"))
		t_fail("%s: want the report in one call of the sink:\n%s", what, buf);
	if (c.err && strstr(c.err, want))
		t_fail("%s: the report reached stderr too:\n%s", what, c.err);
	t_child_free(&c);
}

static void writes(void *arg)
{
	(void)arg;
	REQUIRE(mpk_report_write("to stderr\n", 10) == 0);
	REQUIRE(mpk_report_sink(sink, &got) == 0);
	REQUIRE(mpk_report_write("to the sink\n", 12) == 0);
	CHECK_ERR(mpk_report_sink(NULL, &got), EINVAL);
	CHECK_ERR(mpk_report_write(NULL, 3), EINVAL);
	CHECK(mpk_report_write(NULL, 0) == 0);
	REQUIRE(mpk_report_write("still the sink\n", 15) == 0);
	REQUIRE(mpk_report_sink(NULL, NULL) == 0);
	REQUIRE(mpk_report_write("stderr again\n", 13) == 0);
	CHECK(got.calls == 3);
}

int main(void)
{
	REQUIRE(d = mpk_domain_create("sink", MPK_RW, 0));
	in_child(double_free, "double free", "mpkit: heap misuse: double free of");
	in_child(fault, "fault", "mpkit: protection fault: write of domain \"sink\"");

	static char buf[4096];
	REQUIRE(pipe(pipe_fd) == 0);
	struct t_child c = t_child(writes, NULL, T_CHILD_STDERR | T_CHILD_CHECKS);
	close(pipe_fd[1]);
	ssize_t n = read(pipe_fd[0], buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = 0;
	close(pipe_fd[0]);
	CHECK(c.exit_code == 0);
	CHECK(strstr(buf, "to the sink\n") && strstr(buf, "still the sink\n"));
	CHECK(!strstr(buf, "to stderr") && !strstr(buf, "stderr again"));
	CHECK(c.err && strstr(c.err, "to stderr\n") && strstr(c.err, "stderr again\n"));
	CHECK(c.err && !strstr(c.err, "sink"));
	t_child_free(&c);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
