/*
 * A NULL dereference (SEGV_MAPERR) goes straight to the handler installed
 * before mpkit's, with its siginfo intact, however much domain memory there
 * is: with 100,000 regions registered and an adopted range listed, it is
 * chained before any lookup (mpkit's callback is never called), and a
 * domain fault still reaches mpkit's callback.
 */
#include "t_window.h"

#define N 100000

static sigjmp_buf jb;
static volatile int app_calls, app_code, mpk_calls;
static void *volatile app_addr;
/* Page 0, not NULL itself: UBSan traps a load through a null pointer. */
static int *volatile null_ptr = (int *)16;

static void app_handler(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	app_calls++;
	app_code = si->si_code;
	app_addr = si->si_addr;
	if (sig == SIGSEGV)
		siglongjmp(jb, 1);
}

static int on_fault(const struct mpk_fault *f, void *arg)
{
	(void)arg;
	mpk_calls++;
	if (mpk_set(f->domain, MPK_RW))
		return MPK_FAULT_ABORT;
	return MPK_FAULT_RETRY;
}

int main(void)
{
	size_t page = t_page();

	t_backend();
	static void *bulk_p[N];
	mpk_domain *d = mpk_domain_create("null", MPK_RW, 0);
	/* The registered units belong to a domain whose rights never change
	 * (on soft that would mprotect them all). */
	mpk_domain *bulk = mpk_domain_create("bulk", MPK_RW, 0);
	REQUIRE(d && bulk);
	for (int i = 0; i < N; i++) {
		void *p = bulk_p[i] = mpk__window_carve(page, 0);
		REQUIRE(p && mpk__region_register(bulk, p, page, true) == 0);
	}
	unsigned char *m = t_map_anon(1);
	REQUIRE(mpk_adopt(d, m, page) == 0);
	unsigned char *q = mpk_alloc(d, page);
	REQUIRE(q);

	t_segv_handler_install(app_handler);
	REQUIRE(mpk_fault_handler_install(on_fault, NULL) == 0);

	for (int i = 0; i < 1000; i++) {
		if (!sigsetjmp(jb, 1)) {
			(void)*(volatile int *)null_ptr;
			t_fail("no fault");
		}
	}
	CHECK(app_calls == 1000 && app_code == SEGV_MAPERR && app_addr == (void *)16);
	CHECK(mpk_calls == 0);

	/* Still ours: a closed domain's page goes to the callback. */
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	*(volatile unsigned char *)q = 7;
	CHECK(mpk_calls == 1 && app_calls == 1000 && q[0] == 7);
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	CHECK(*(volatile unsigned char *)m == 0 && mpk_calls == 2);
	CHECK(mpk_fault_handler_remove() == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	for (int i = 0; i < N; i++) {
		CHECK(mpk__region_register(bulk, bulk_p[i], page, false) == 0);
		mpk__window_uncarve(bulk_p[i], page);
	}
	CHECK(mpk_domain_destroy(bulk) == 0);
	return t_done();
}
