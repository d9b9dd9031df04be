/*
 * The misuse handler: mpk_misuse_handler_set() replaces it (and refuses an
 * argument without a function, EINVAL, keeping the one set); the handler
 * runs in the caller's thread with the caller's rights and may call mpkit;
 * NULL restores the default, which prints the report and aborts.  The
 * report's first line is exactly mpk_misuse_format() of the misuse, and the
 * format names each kind; mpk_misuse_format() rejects bad input (EINVAL)
 * and, like snprintf, says how long the report is when the buffer is short.
 */
#include "t_heap.h"

static mpk_heap *h, *spare;
static void *freed;
static int calls, rights_seen, alloc_ok;
static mpk_domain *dom;

static void handler(const struct mpk_misuse *m, void *arg)
{
	(void)m;
	calls += *(int *)arg;
	rights_seen = mpk_get(dom);
	void *p = mpk_heap_malloc(spare, 10); /* mpkit works in here */
	alloc_ok = p && mpk_heap_free(spare, p) == 0;
}

static void restored(void *arg)
{
	(void)arg;
	REQUIRE(mpk_misuse_handler_set(NULL, NULL) == 0);
	mpk_heap_free(h, freed);
	_exit(0);
}

int main(void)
{
	static char report[16384];
	char line[512];
	int one = 1;

	t_backend();
	REQUIRE(dom = mpk_domain_create("misuse", MPK_RW, 0));
	REQUIRE(h = mpk_heap_create(dom, 0));
	REQUIRE(spare = mpk_heap_create(dom, 0));
	REQUIRE(freed = mpk_heap_malloc(h, 10));
	REQUIRE(mpk_heap_free(h, freed) == 0);

	REQUIRE(mpk_misuse_handler_set(handler, &one) == 0);
	CHECK_ERR(mpk_misuse_handler_set(NULL, &one), EINVAL);
	REQUIRE(mpk_set(dom, MPK_READ) == 0);
	CHECK_ERR(mpk_heap_free(h, freed), EINVAL);
	CHECK(calls == 1 && rights_seen == MPK_READ && alloc_ok);
	CHECK(mpk_get(dom) == MPK_READ);
	REQUIRE(mpk_set(dom, MPK_RW) == 0);

	/* Back to the default: report, abort; the line is the format's. */
	int st = t_child_stderr(restored, NULL, report, sizeof(report));
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	struct mpk_misuse m = {
		.kind = MPK_MISUSE_DOUBLE_FREE, .call = "mpk_heap_free", .addr = freed,
		.heap = h, .domain = dom, .domain_name = "misuse",
	};
	size_t n = mpk_misuse_format(&m, line, sizeof(line));
	CHECK(n > 0 && n < sizeof(line) && line[n - 1] == '\n');
	CHECK_HAS(report, line);

	/* Each kind in words. */
	m.kind = MPK_MISUSE_FOREIGN;
	m.owner = spare;
	m.owner_domain = dom;
	m.owner_domain_name = "misuse";
	mpk_misuse_format(&m, line, sizeof(line));
	CHECK_HAS(line, "foreign pointer");
	CHECK_HAS(line, "it belongs to heap");
	m.owner = NULL;
	mpk_misuse_format(&m, line, sizeof(line));
	CHECK_HAS(line, "it is a secret in the vault of domain \"misuse\"");
	m.kind = MPK_MISUSE_WILD;
	mpk_misuse_format(&m, line, sizeof(line));
	CHECK_HAS(line, "wild pointer");
	m.kind = MPK_MISUSE_CORRUPT;
	mpk_misuse_format(&m, line, sizeof(line));
	CHECK_HAS(line, "corrupted block header before");
	m.heap = NULL;
	mpk_misuse_format(&m, line, sizeof(line));
	CHECK_HAS(line, "(vault of domain \"misuse\")");

	/* Short buffers, bad input. */
	size_t full = mpk_misuse_format(&m, NULL, 0);
	CHECK(full > 20);
	char tiny[8];
	CHECK(mpk_misuse_format(&m, tiny, sizeof(tiny)) == full && strlen(tiny) == 7);
	CHECK_ERR(mpk_misuse_format(NULL, line, sizeof(line)), EINVAL);
	CHECK_ERR(mpk_misuse_format(&m, NULL, 10), EINVAL);
	m.kind = 0;
	CHECK_ERR(mpk_misuse_format(&m, line, sizeof(line)), EINVAL);
	m.kind = 99;
	CHECK_ERR(mpk_misuse_format(&m, line, sizeof(line)), EINVAL);

	CHECK(calls == 1);
	CHECK(mpk_heap_destroy(h) == 0 && mpk_heap_destroy(spare) == 0);
	CHECK(mpk_domain_destroy(dom) == 0);
	return t_done();
}
