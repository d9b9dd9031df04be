/*
 * mpk_fault_handler_remove() restores the SIGSEGV handler that was there
 * before mpk_fault_handler_install(): sigaction() shows it again and a
 * domain fault now reaches it directly, with the original siginfo.  A
 * second remove fails with EINVAL.  Installing over the default action and
 * removing restores SIG_DFL.
 */
#include "t.h"

static sigjmp_buf jb;
static struct {
	int calls, code, pkey;
	void *addr;
} app;

static void app_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	app.calls++;
	app.code = si->si_code;
	app.pkey = si->si_code == SEGV_PKUERR ? (int)si->si_pkey : -1;
	app.addr = si->si_addr;
	siglongjmp(jb, 1);
}

static int never(const struct mpk_fault *f, void *arg)
{
	(void)f;
	(void)arg;
	return MPK_FAULT_ABORT;
}

int main(void)
{
	struct sigaction cur;
	int hw = t_backend() == MPK_BACKEND_HW;

	t_segv_handler_install(app_handler);

	mpk_domain *d = mpk_domain_create("remove", MPK_NONE, 0);
	REQUIRE(d);
	unsigned char *p = mpk_alloc(d, 4096);
	REQUIRE(p);

	CHECK_ERR(mpk_fault_handler_remove(), EINVAL); /* none installed yet */
	REQUIRE(mpk_fault_handler_install(never, NULL) == 0);
	REQUIRE(sigaction(SIGSEGV, NULL, &cur) == 0);
	CHECK(cur.sa_sigaction != app_handler);
	REQUIRE(mpk_fault_handler_remove() == 0);
	REQUIRE(sigaction(SIGSEGV, NULL, &cur) == 0);
	CHECK((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == app_handler);
	CHECK_ERR(mpk_fault_handler_remove(), EINVAL);

	/* The domain fault goes straight to the application's handler. */
	if (!sigsetjmp(jb, 1)) {
		t_touch_read(p + 40);
		t_fail("read of a closed domain did not fault");
	}
	CHECK(app.calls == 1);
	CHECK(app.addr == (void *)(p + 40));
	if (hw) {
		CHECK(app.code == SEGV_PKUERR);
		CHECK(app.pkey == mpk_domain_key(d));
	} else {
		CHECK(app.code == SEGV_ACCERR);
	}

	/* Over the default action. */
	signal(SIGSEGV, SIG_DFL);
	REQUIRE(mpk_fault_handler_install(NULL, NULL) == 0);
	REQUIRE(sigaction(SIGSEGV, NULL, &cur) == 0);
	CHECK(cur.sa_handler != SIG_DFL);
	REQUIRE(mpk_fault_handler_remove() == 0);
	REQUIRE(sigaction(SIGSEGV, NULL, &cur) == 0);
	CHECK(!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
