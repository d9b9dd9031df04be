/*
 * What mpk_lockdown() does to the signals a trap or a fault raises, on both
 * backends.  Before: a SIGTRAP handler and a SIGBUS handler of the
 * program's.  After: SIGTRAP is back to its default action (a trap ends the
 * process), SIGBUS keeps the program's handler, and no new action can be
 * given to SIGILL, SIGTRAP, SIGBUS, SIGFPE or SIGSEGV (EPERM; without
 * MPK_LOCK_ERRNO the process is killed, SIGSYS), while a query still works
 * and other signals are free.  mpkit's own handlers still come and go from
 * its site: the fault handler installed after the lockdown reports a stray
 * read, and a watchpoint set after it reports a write (its SIGTRAP handler
 * too).  perf_event_open is denied, and so are mprotect, munmap and
 * madvise of mpkit's gate code (the pages of its checked WRPKRU sites).
 */
#include <linux/perf_event.h>

#include "t_pit.h"

static void on_user(int sig)
{
	(void)sig;
}

static int on_fault(const struct mpk_fault *f, void *arg)
{
	(void)f;
	(void)arg;
	_exit(42); /* the report reached mpkit's callback */
}

static volatile int hits; /* written by the SIGSEGV handler */
static void on_hit(const struct mpk_watch_hit *h, void *arg)
{
	(void)h;
	(void)arg;
	hits++;
}

static void stray(void *p)
{
	REQUIRE(mpk_fault_handler_install(on_fault, NULL) == 0);
	t_touch_read(p);
}

/* In a child: the default action (kill) for a denied new SIGTRAP action. */
static void killed(void *arg)
{
	(void)arg;
	REQUIRE(mpk_lockdown(0) == 0);
	signal(SIGTRAP, SIG_IGN);
	_exit(0);
}

int main(void)
{
	static const int frozen[] = { SIGILL, SIGTRAP, SIGBUS, SIGFPE, SIGSEGV };
	struct sigaction sa = { .sa_handler = on_user }, cur;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	CHECK(t_child(killed, NULL, 0).signal == SIGSYS);

	mpk_domain *d = mpk_domain_create("sig-secret", MPK_RW, 0);
	REQUIRE(d);
	unsigned char *secret = mpk_alloc(d, page);
	REQUIRE(secret);
	unsigned char *watched = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(watched != MAP_FAILED);
	REQUIRE(sigaction(SIGTRAP, &sa, NULL) == 0 && sigaction(SIGBUS, &sa, NULL) == 0);
	REQUIRE(mpk_set(d, MPK_NONE) == 0);

	REQUIRE(mpk_lockdown(MPK_LOCK_ERRNO) == 0);

	CHECK(sigaction(SIGTRAP, NULL, &cur) == 0 && cur.sa_handler == SIG_DFL);
	CHECK(sigaction(SIGBUS, NULL, &cur) == 0 && cur.sa_handler == on_user);
	for (size_t i = 0; i < sizeof(frozen) / sizeof(frozen[0]); i++) {
		CHECK_ERR(sigaction(frozen[i], &sa, NULL), EPERM);
		CHECK(signal(frozen[i], SIG_IGN) == SIG_ERR && errno == EPERM);
	}
	CHECK(sigaction(SIGTRAP, NULL, &cur) == 0 && cur.sa_handler == SIG_DFL);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	CHECK(signal(SIGUSR1, SIG_DFL) == on_user);

	/* mpkit's handlers, from its site */
	struct t_fault f = t_run_child(stray, secret);
	CHECK(!f.faulted && f.exit_code == 42);
	int id = mpk_watch(watched + 8, 8, MPK_WATCH_WRITE, on_hit, NULL);
	CHECK(id >= 0);
	((volatile unsigned char *)watched)[8] = 1;
	CHECK(hits == 1 && watched[8] == 1);
	CHECK(id < 0 || mpk_unwatch(id) == 0);

	/* perf_event_open: denied, whatever it asks */
	struct perf_event_attr a = { .type = PERF_TYPE_SOFTWARE, .size = sizeof(a),
				     .config = PERF_COUNT_SW_TASK_CLOCK, .exclude_kernel = 1 };
	CHECK(syscall(SYS_perf_event_open, &a, 0, -1, -1, 0) == -1 && errno == EPERM);

	/* mpkit's gate code: the page of one of its WRPKRU sites */
	void *gate = (void *)(pit_mpkit_site(0) & ~(uintptr_t)(page - 1));
	CHECK_ERR(mprotect(gate, page, PROT_READ | PROT_EXEC), EPERM);
	CHECK_ERR(mprotect(gate, page, PROT_READ), EPERM);
	CHECK_ERR(munmap(gate, page), EPERM);
	CHECK_ERR(madvise(gate, page, MADV_DONTNEED), EPERM);
	MPK_WITH(d, MPK_READ) CHECK(secret[0] == 0); /* mpkit works on */
	t_exit_locked();
}
