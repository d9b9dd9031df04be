/*
 * The fault callback: mpk_fault_handler_install(fn, arg) passes fn a full
 * description of the fault (domain, name, address, offset, region, write
 * flag, key, si_code, thread, rights held) and arg.  fn opening the domain
 * with mpk_set(d, MPK_RW) and returning MPK_FAULT_RETRY makes the faulting
 * access complete, and the thread keeps RW afterwards.  Both backends (hw:
 * through the signal frame's PKRU; soft: through mprotect).
 */
#include "t.h"

static mpk_domain *d;
static unsigned char *p;
static int hw;
static int token;

static struct {
	int calls;
	struct mpk_fault f;
	int name_ok;
	void *arg;
	int get_in_cb;      /* mpk_get() in the callback, before mpk_set() */
	int set_rc;
} cb;

static int on_fault(const struct mpk_fault *f, void *arg)
{
	if (cb.calls++ > 3)
		return MPK_FAULT_ABORT; /* retrying does not help: stop */
	cb.f = *f;
	cb.arg = arg;
	cb.name_ok = f->domain_name && !strcmp(f->domain_name, "cb-dom");
	cb.get_in_cb = mpk_get(f->domain);
	cb.set_rc = mpk_set(f->domain, MPK_RW);
	return MPK_FAULT_RETRY;
}

static void check_fault(int write, size_t off, int rights_then)
{
	CHECK(cb.calls == 1);
	CHECK(cb.arg == &token);
	CHECK(cb.f.domain == d);
	CHECK(cb.name_ok);
	CHECK(cb.f.addr == (void *)(p + off));
	CHECK(cb.f.region == (void *)p);
	CHECK(cb.f.region_len == 3 * 4096);
	CHECK(cb.f.offset == off);
	CHECK(cb.f.write == write);
	CHECK(cb.f.tid == (pid_t)syscall(SYS_gettid));
	CHECK(cb.f.rights == rights_then);
	CHECK(cb.get_in_cb == rights_then); /* the interrupted thread's rights */
	CHECK(cb.set_rc == 0);
	if (hw) {
		CHECK(cb.f.si_code == SEGV_PKUERR);
		CHECK(cb.f.pkey == mpk_domain_key(d));
	} else {
		CHECK(cb.f.si_code == SEGV_ACCERR);
		CHECK(cb.f.pkey == -1);
	}
}

static void scenario(void)
{
	struct mpk_stats s0, s1;

	hw = t_backend() == MPK_BACKEND_HW;
	REQUIRE(d = mpk_domain_create("cb-dom", MPK_RW, 0));
	REQUIRE(p = mpk_alloc(d, 3 * 4096));
	p[4096 + 7] = 0x77;
	REQUIRE(mpk_fault_handler_install(on_fault, &token) == 0);
	REQUIRE(mpk_stats_get(&s0) == 0);

	/* A read under NONE. */
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	memset(&cb, 0, sizeof(cb));
	unsigned char v = *(volatile unsigned char *)(p + 4096 + 7);
	__atomic_signal_fence(__ATOMIC_SEQ_CST); /* the handler ran in between */
	CHECK(v == 0x77);
	check_fault(0, 4096 + 7, MPK_NONE);
	CHECK(mpk_get(d) == MPK_RW); /* kept */
	p[4096 + 8] = 0x78;          /* no fault now */
	CHECK(cb.calls == 1);

	/* A write under READ. */
	REQUIRE(mpk_set(d, MPK_READ) == 0);
	memset(&cb, 0, sizeof(cb));
	*(volatile unsigned char *)(p + 2 * 4096 + 0x99) = 0x42;
	__atomic_signal_fence(__ATOMIC_SEQ_CST); /* the handler ran in between */
	check_fault(1, 2 * 4096 + 0x99, MPK_READ);
	CHECK(mpk_get(d) == MPK_RW);
	CHECK(p[2 * 4096 + 0x99] == 0x42); /* the retried write landed */
	p[0] = 1;
	CHECK(cb.calls == 1);
	if (hw) /* really RW in the register, not only in mpk_get() */
		CHECK_NO_FAULT(t_write_in_child(p + 2));

	/* A write under NONE, in a scope: the scope still restores. */
	REQUIRE(mpk_set(d, MPK_READ) == 0);
	memset(&cb, 0, sizeof(cb));
	MPK_WITH(d, MPK_NONE) {
		*(volatile unsigned char *)(p + 3) = 3;
		__atomic_signal_fence(__ATOMIC_SEQ_CST); /* the handler ran in between */
		check_fault(1, 3, MPK_NONE);
		CHECK(mpk_get(d) == MPK_RW);
	}
	CHECK(mpk_get(d) == MPK_READ);
	CHECK(p[3] == 3);

	REQUIRE(mpk_stats_get(&s1) == 0);
	CHECK(s1.faults_reported == s0.faults_reported + 3);
	CHECK(mpk_fault_handler_remove() == 0);
	CHECK(mpk_domain_destroy(d) == 0);
}

int main(void)
{
	return t_both_backends(scenario);
}
