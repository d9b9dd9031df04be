/*
 * hw (issue 20, item 4): a revoke that lands on the first instruction of
 * the program's own SIGSEGV handler reaches the code the handler returns
 * to.  Thread T holds RW to domain d (key k) and reads a PROT_NONE page;
 * the program's handler (SA_SIGINFO, SIGSEGV blocked while it runs: its
 * frame is found by its mask) opens the page and returns.  A tracer (the
 * parent, with ptrace) holds T's SIGSEGV until main's destroy of d has
 * signalled T, then lets both go: the kernel sets up the SIGSEGV frame and
 * delivers the revoke on top of it before the handler runs one
 * instruction, so the handler's frame starts exactly at the stack pointer
 * the revoke interrupted.  Then main creates d2, which gets key k again: T
 * must hold no rights to it once its handler has returned (t_ptrace.h).
 * Before the fix, the search for outer frames began 8 bytes above that
 * stack pointer and missed the frame: sigreturn gave T its old PKRU back,
 * k open.
 */
#define _GNU_SOURCE
#include "t_ptrace.h"

static unsigned char *guard;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if ((unsigned char *)si->si_addr != guard || mprotect(guard, 4096, PROT_READ))
		_exit(3);
}

static void setup(void)
{
	struct sigaction sa;

	guard = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(guard != MAP_FAILED);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	REQUIRE(sigaction(SIGSEGV, &sa, NULL) == 0);
}

static void fault(void)
{
	(void)*(volatile unsigned char *)guard; /* faults */
}

int main(void)
{
	return t_revoke_on_fault_entry(setup, fault);
}
