/*
 * mpk_set_interrupted(d, rights, uc) from a signal handler sets the rights
 * of the code the signal interrupted: after the handler returns the thread
 * holds them (mpk_get(), and in the register on hw: a child forked then
 * writes, or faults with SEGV_PKUERR and the domain's key), while the
 * handler's own rights stayed as they were (hw: the handler's PKRU is not
 * the frame's).  Opened, then read-only, then closed, each from a handler;
 * bad input (rights 2, ucontext NULL, a destroyed domain) is EINVAL and
 * changes nothing.  Both backends (soft: as mpk_set()).
 */
#include "t.h"

static mpk_domain *d;
static struct {
	mpk_domain *dom;
	int want, rc, err, own_before, own_after;
} h;

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	h.own_before = mpk_get(h.dom);
	errno = 0;
	h.rc = mpk_set_interrupted(h.dom, h.want, uc);
	h.err = errno;
	h.own_after = mpk_get(h.dom);
}

/* rights set from a handler: the rc and errno it got. */
static int from_handler(mpk_domain *dom, int rights)
{
	memset(&h, 0, sizeof(h));
	h.dom = dom;
	h.want = rights;
	REQUIRE(raise(SIGUSR1) == 0);
	__atomic_signal_fence(__ATOMIC_SEQ_CST); /* the handler ran in between */
	errno = h.err;
	return h.rc;
}

static void scenario(void)
{
	int hw = t_backend() == MPK_BACKEND_HW;
	struct sigaction sa = { .sa_sigaction = on_usr1, .sa_flags = SA_SIGINFO };
	unsigned char *p;

	sigemptyset(&sa.sa_mask);
	REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0);
	REQUIRE(d = mpk_domain_create("intr", MPK_RW, 0));
	REQUIRE(p = mpk_alloc(d, 4096));
	p[0] = 1;
	REQUIRE(mpk_set(d, MPK_NONE) == 0);

	/* Opened from the handler: the thread writes once it returns. */
	CHECK(from_handler(d, MPK_RW) == 0);
	CHECK(mpk_get(d) == MPK_RW);
	if (hw) /* the handler's own rights did not change */
		CHECK(h.own_after == h.own_before);
	p[1] = 2;
	CHECK(p[0] == 1 && p[1] == 2);
	CHECK_NO_FAULT(t_write_in_child(p + 2)); /* in the register (hw) */

	/* Read-only: reads go on, writes fault. */
	CHECK(from_handler(d, MPK_READ) == 0);
	CHECK(mpk_get(d) == MPK_READ);
	CHECK(p[1] == 2);
	CHECK_NO_FAULT(t_read_in_child(p));
	CHECK_FAULT(t_write_in_child(p + 8), d, p + 8);

	/* Closed: reads fault too. */
	CHECK(from_handler(d, MPK_NONE) == 0);
	CHECK(mpk_get(d) == MPK_NONE);
	CHECK_FAULT(t_read_in_child(p + 16), d, p + 16);

	/* Bad input: EINVAL, the interrupted rights as they were. */
	CHECK(from_handler(d, 2) == -1 && errno == EINVAL);
	CHECK(mpk_get(d) == MPK_NONE);
	CHECK_ERR(mpk_set_interrupted(d, MPK_RW, NULL), EINVAL);
	CHECK(mpk_get(d) == MPK_NONE);
	CHECK_FAULT(t_read_in_child(p + 16), d, p + 16);
	mpk_domain *gone = mpk_domain_create("intr-gone", MPK_RW, 0);
	REQUIRE(gone && mpk_domain_destroy(gone) == 0);
	CHECK(from_handler(gone, MPK_RW) == -1 && errno == EINVAL);

	CHECK(mpk_domain_destroy(d) == 0);
}

int main(void)
{
	return t_both_backends(scenario);
}
