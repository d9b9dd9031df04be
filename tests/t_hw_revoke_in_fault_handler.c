/*
 * hw: a revoke that arrives while a thread is being handed a domain fault
 * is not lost.  Thread T holds RW to domain d (key k) and faults on another
 * domain x; the fault callback opens x and retries.  A tracer (the parent,
 * with ptrace) holds T's SIGSEGV until main's destroy of d has signalled T
 * too, then lets both go: the kernel sets up the SIGSEGV frame and, unless
 * mpkit's fault handler blocks it, delivers the revoke on top of it, where
 * it would edit only the handler's own PKRU, and the handler would then
 * hand T back the old PKRU with k open.  Then main creates d2, which gets
 * key k again: T must have no rights to it (t_ptrace.h).
 */
#define _GNU_SOURCE
#include "t_ptrace.h"

static mpk_domain *x;
static unsigned char *px;

static int on_fault(const struct mpk_fault *f, void *arg)
{
	(void)arg;
	if (f->domain != x)
		return MPK_FAULT_ABORT;
	if (mpk_set(x, MPK_READ))
		return MPK_FAULT_ABORT;
	return MPK_FAULT_RETRY;
}

static void setup(void)
{
	REQUIRE(mpk_fault_handler_install(on_fault, NULL) == 0);
	REQUIRE(x = mpk_domain_create("handler-x", MPK_RW, 0));
	REQUIRE(px = mpk_alloc(x, 4096));
	px[1] = 0x11;
	REQUIRE(mpk_set(x, MPK_NONE) == 0);
}

static void fault(void)
{
	REQUIRE(mpk_get(x) == MPK_NONE);
	unsigned char v = *(volatile unsigned char *)(px + 1); /* faults */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	CHECK(v == 0x11);
	CHECK(mpk_get(x) == MPK_READ);
}

int main(void)
{
	return t_revoke_on_fault_entry(setup, fault);
}
