/*
 * The fault report: with mpk_fault_handler_install(NULL, NULL), a stray
 * read (and, separately, a write) of a closed domain "tls-keys" kills the
 * process with SIGABRT after printing a report on stderr that names the
 * domain, the exact address and offset, read or write, the key (hw) or "no
 * key (soft backend)", the faulting thread's id, and one backtrace from
 * the faulting instruction, frames as module+offset.  The
 * report's first lines are exactly what mpk_fault_format() makes of the
 * fault.  Runs on the soft backend (forced, in a child) and on hw where
 * present; on hw also for a domain past the key budget, which has no key
 * (a virtual domain: the report says so, SEGV_ACCERR).
 */
#include "t.h"

#define OFF 0x1234

static mpk_domain *d;
static unsigned char *p;

/* What the child does: tell its thread id on fd, then touch. */
struct stray {
	int tid_fd, wr;
};

/* The child: say who it is, then touch p + OFF (write or read) while closed. */
static void stray(void *arg)
{
	const struct stray *s = arg;
	pid_t tid = (pid_t)syscall(SYS_gettid);
	REQUIRE(mpk_fault_handler_install(NULL, NULL) == 0);
	REQUIRE(mpk_set(d, s->wr ? MPK_READ : MPK_NONE) == 0);
	REQUIRE(write(s->tid_fd, &tid, sizeof(tid)) == (ssize_t)sizeof(tid));
	close(s->tid_fd);
	if (s->wr)
		t_touch_write(p + OFF);
	else
		t_touch_read(p + OFF);
	_exit(0); /* not reached */
}

static void want(const char *report, const char *what)
{
	if (!strstr(report, what))
		t_fail("report lacks \"%s\"", what);
}

static void one(int wr)
{
	int tidp[2];
	pid_t tid = 0;

	REQUIRE(pipe(tidp) == 0);
	struct stray s = { tidp[1], wr };
	struct t_child c = t_child(stray, &s, T_CHILD_STDERR);
	const char *report = c.err;
	close(tidp[1]);
	CHECK(read(tidp[0], &tid, sizeof(tid)) == (ssize_t)sizeof(tid));
	close(tidp[0]);
	if (c.signal != SIGABRT)
		t_fail("%s: child status 0x%x, want death by SIGABRT", wr ? "write" : "read", c.status);
	CHECK(tid > 0 && tid == c.pid); /* the child's only thread */

	int hw = mpk_backend() == MPK_BACKEND_HW;
	int keyed = mpk_domain_key(d) >= 0;
	char buf[256];
	want(report, "mpkit: protection fault");
	want(report, wr ? "write of domain \"tls-keys\"" : "read of domain \"tls-keys\"");
	snprintf(buf, sizeof(buf), " at %p ", (void *)(p + OFF));
	want(report, buf);
	snprintf(buf, sizeof(buf), "(offset %#x ", OFF);
	want(report, buf);
	snprintf(buf, sizeof(buf), "thread %d ", (int)tid);
	want(report, buf);
	if (keyed) {
		snprintf(buf, sizeof(buf), "key %d", mpk_domain_key(d));
		want(report, buf);
		want(report, "SEGV_PKUERR");
	} else {
		want(report, hw ? "no key now (virtual domain: mprotect)" : "no key (soft backend)");
		want(report, "SEGV_ACCERR");
	}
	want(report, wr ? "holds read," : "holds none,");
	/* One backtrace, from the faulting instruction: in t_touch_*, then
	 * this test's binary as module+offset (a static link: its frames
	 * are all the program's). */
	want(report, "mpkit:   backtrace, from the faulting instruction:\n");
	const char *bt = strstr(report, "instruction:\n");
	CHECK(!strstr(bt, "#0 0x") || !strstr(strstr(bt, "#0 0x") + 1, "#0 0x")); /* once */
	CHECK(bt && !strncmp(bt + strlen("instruction:\n"), "mpkit:     #0 0x", 16));
	snprintf(buf, sizeof(buf), "/%s+0x", program_invocation_short_name);
	want(report, buf);
	CHECK(strstr(report, "addr2line") == NULL);

	/* Exactly what mpk_fault_format() says of this fault. */
	struct mpk_fault f = {
		.domain = d, .domain_name = "tls-keys", .addr = p + OFF,
		.offset = OFF, .region = p, .region_len = 4 * 4096,
		.write = wr, .pkey = keyed ? mpk_domain_key(d) : -1,
		.si_code = keyed ? SEGV_PKUERR : SEGV_ACCERR, .tid = tid,
		.rights = wr ? MPK_READ : MPK_NONE,
	};
	size_t flen = mpk_fault_format(&f, buf, sizeof(buf));
	CHECK(flen > 0 && flen < sizeof(buf));
	if (!strstr(report, buf))
		t_fail("report does not contain the formatted fault:\n%s\n--- report:\n%s",
		       buf, report);
	t_child_free(&c);
}

static void scenario(void)
{
	REQUIRE(d = mpk_domain_create("tls-keys", MPK_RW, 0));
	REQUIRE(p = mpk_alloc(d, 4 * 4096));
	p[OFF] = 1;
	one(0);
	one(1);
	if (mpk_backend() != MPK_BACKEND_HW) {
		CHECK(mpk_domain_destroy(d) == 0);
		return;
	}
	/* hw: keep d's key, allow no other, and a new closed domain has none. */
	mpk_domain *keyed = d;
	struct mpk_info in;
	REQUIRE(mpk_info(&in) == 0);
	REQUIRE(mpk_set_key_budget(in.keys_in_use) == 0);
	REQUIRE(d = mpk_domain_create("tls-keys", MPK_NONE, 0));
	REQUIRE(mpk_domain_key(d) < 0);
	REQUIRE(p = mpk_alloc(d, 4 * 4096));
	one(0);
	CHECK(mpk_domain_destroy(d) == 0);
	CHECK(mpk_domain_destroy(keyed) == 0);
}

int main(void)
{
	return t_both_backends(scenario);
}
