/*
 * hw: a signal handler runs with the kernel's default PKRU, so a domain the
 * thread had open is closed inside the handler: mpk_get() says MPK_NONE
 * and a read faults (SEGV_PKUERR, the domain's key).  mpk_set() in the
 * handler opens it there.  After the handler returns the thread has its
 * earlier rights back, whatever the handler left.
 */
#include "t.h"

static mpk_domain *d, *other;
static unsigned char *p;

static struct {
	int calls, rights, pkey, code, write;
	void *addr;
} seen;

static struct {
	int ran;
	int entry_rights, other_rights; /* mpk_get() on entry */
	int value;                      /* what the faulting read returned */
	int after_set;                  /* mpk_get() after mpk_set(RW) */
	int set_rc;
} h;

static int on_fault(const struct mpk_fault *f, void *arg)
{
	(void)arg;
	if (seen.calls++ > 3)
		return MPK_FAULT_ABORT; /* retrying does not help: stop */
	seen.rights = f->rights;
	seen.pkey = f->pkey;
	seen.code = f->si_code;
	seen.write = f->write;
	seen.addr = f->addr;
	if (mpk_set(f->domain, MPK_READ))
		return MPK_FAULT_ABORT;
	return MPK_FAULT_RETRY;
}

static void on_usr1(int sig)
{
	(void)sig;
	h.ran++;
	h.entry_rights = mpk_get(d);
	h.other_rights = mpk_get(other);
	h.value = *(volatile unsigned char *)(p + 12); /* faults: closed here */
	__atomic_signal_fence(__ATOMIC_SEQ_CST); /* the handler ran in between */
	h.set_rc = mpk_set(d, MPK_RW);
	p[13] = 0x13; /* opened in the handler */
	h.after_set = mpk_get(d);
}

int main(void)
{
	t_need_hw();
	REQUIRE(d = mpk_domain_create("sig", MPK_RW, 0));
	REQUIRE(other = mpk_domain_create("sig-other", MPK_RW, 0));
	REQUIRE(p = mpk_alloc(d, 4096));
	p[12] = 0x12;
	REQUIRE(mpk_fault_handler_install(on_fault, NULL) == 0);
	signal(SIGUSR1, on_usr1);

	/* Open (READ) before the signal; the handler leaves RW behind. */
	REQUIRE(mpk_set(d, MPK_READ) == 0);
	CHECK(mpk_get(other) == MPK_RW);
	REQUIRE(raise(SIGUSR1) == 0);

	CHECK(h.ran == 1);
	CHECK(h.entry_rights == MPK_NONE);
	CHECK(h.other_rights == MPK_NONE);
	CHECK(seen.calls == 1);
	CHECK(seen.code == SEGV_PKUERR);
	CHECK(seen.pkey == mpk_domain_key(d));
	CHECK(seen.rights == MPK_NONE);
	CHECK(seen.write == 0);
	CHECK(seen.addr == (void *)(p + 12));
	CHECK(h.value == 0x12);
	CHECK(h.set_rc == 0);
	CHECK(h.after_set == MPK_RW);

	/* Back: the rights from before the signal, not the handler's. */
	CHECK(mpk_get(d) == MPK_READ);
	CHECK(mpk_get(other) == MPK_RW);
	CHECK(p[13] == 0x13);
	CHECK_FAULT(t_write_in_child(p + 14), d, p + 14);

	/* And from NONE: the handler's RW does not leak out either. */
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	memset(&seen, 0, sizeof(seen));
	REQUIRE(raise(SIGUSR1) == 0);
	CHECK(h.ran == 2 && seen.calls == 1 && h.after_set == MPK_RW);
	CHECK(mpk_get(d) == MPK_NONE);
	CHECK_FAULT(t_read_in_child(p + 13), d, p + 13);
	CHECK(seen.calls == 1);
	return t_done();
}
