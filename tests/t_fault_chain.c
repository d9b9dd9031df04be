/*
 * SIGSEGVs that are not mpkit's go to the handler installed before
 * mpk_fault_handler_install(): a write to a read-only page outside any
 * domain, a NULL dereference, and (hw) a fault on a key the application
 * allocated itself.  The earlier handler sees the original siginfo; mpkit's
 * callback is not called and counts nothing.  A domain fault still goes to
 * mpkit's callback, not to the earlier handler.  An earlier handler without
 * SA_SIGINFO is chained to as well.
 */
#include "t.h"

static sigjmp_buf jb;
static struct {
	int calls, code, pkey;
	void *addr;
} app;
static int mpk_calls;
static void *volatile near_null = (void *)16;

static void app_handler(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	app.calls++;
	app.code = si->si_code;
	app.pkey = si->si_code == SEGV_PKUERR ? (int)si->si_pkey : -1;
	app.addr = si->si_addr;
	if (sig == SIGSEGV)
		siglongjmp(jb, 1);
}

static int on_fault(const struct mpk_fault *f, void *arg)
{
	(void)arg;
	if (mpk_calls++ > 3)
		return MPK_FAULT_ABORT; /* retrying does not help: stop */
	if (mpk_set(f->domain, MPK_RW))
		return MPK_FAULT_ABORT;
	return MPK_FAULT_RETRY;
}

/* Touch p; return whether the earlier handler took a fault. */
static int provoke(void *p, int wr)
{
	memset(&app, 0, sizeof(app));
	if (sigsetjmp(jb, 1))
		return 1;
	if (wr)
		t_touch_write(p);
	else
		t_touch_read(p);
	__atomic_signal_fence(__ATOMIC_SEQ_CST); /* the handler ran in between */
	return 0;
}

static void plain_handler(int sig)
{
	(void)sig;
	_exit(42);
}

/* In a child: a plain handler first, then mpkit's; a write to ro. */
static void plain_chained(void *ro)
{
	mpk_fault_handler_remove();
	signal(SIGSEGV, plain_handler);
	if (mpk_fault_handler_install(NULL, NULL))
		_exit(3);
	t_touch_write(ro);
	_exit(4);
}

int main(void)
{
	struct mpk_stats s0, s1;
	int hw = t_backend() == MPK_BACKEND_HW;

	t_segv_handler_install(app_handler);

	mpk_domain *d = mpk_domain_create("chain", MPK_RW, 0);
	REQUIRE(d);
	unsigned char *dp = mpk_alloc(d, 4096);
	REQUIRE(dp);
	REQUIRE(mpk_fault_handler_install(on_fault, NULL) == 0);
	REQUIRE(mpk_stats_get(&s0) == 0);

	/* Not mpkit's: a read-only page. */
	unsigned char *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(ro != MAP_FAILED);
	CHECK(provoke(ro + 10, 1));
	CHECK(app.calls == 1 && app.code == SEGV_ACCERR && app.addr == (void *)(ro + 10));

	/* Not mpkit's: NULL (well, page 0). */
	CHECK(provoke(near_null, 0));
	CHECK(app.calls == 1 && app.code == SEGV_MAPERR && app.addr == (void *)16);

	/* Not mpkit's: a key the application took itself. */
	if (hw) {
		int ak = pkey_alloc(0, 0);
		REQUIRE(ak > 0);
		unsigned char *ap = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
					 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		REQUIRE(ap != MAP_FAILED);
		REQUIRE(pkey_mprotect(ap, 4096, PROT_READ | PROT_WRITE, ak) == 0);
		REQUIRE(pkey_set(ak, PKEY_DISABLE_ACCESS) == 0);
		CHECK(provoke(ap + 20, 0));
		CHECK(app.calls == 1 && app.code == SEGV_PKUERR && app.pkey == ak &&
		      app.addr == (void *)(ap + 20));
		REQUIRE(pkey_set(ak, 0) == 0);
	}
	CHECK(mpk_calls == 0);
	REQUIRE(mpk_stats_get(&s1) == 0);
	CHECK(s1.faults_reported == s0.faults_reported);

	/* mpkit's own fault is not chained. */
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	CHECK(!provoke(dp + 30, 1));
	CHECK(app.calls == 0 && mpk_calls == 1);
	CHECK(dp[30] == 0x5a);

	/* An earlier handler without SA_SIGINFO, in a child. */
	CHECK(t_child(plain_chained, ro, 0).exit_code == 42);
	return t_done();
}
