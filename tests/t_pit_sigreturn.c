/* Pitfall: a forged signal frame.  The frame is user memory and sigreturn
 * loads PKRU from its XSAVE image: a handler (or a forged rt_sigreturn)
 * that writes 0 there returns with every key open.  No user-space measure
 * stops it (sigreturn cannot be denied; CET shadow stacks would be needed):
 * the documented outcome is LEAKED on hw, before and after.  On soft the
 * frame has no PKRU and the page stays PROT_NONE: SIGSEGV. */
#include <cpuid.h>
#include "t_pit.h"
#include <ucontext.h>

static void open_all(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)si;
	ucontext_t *uc = ucv;
	unsigned a, b = 0, c, d;
	unsigned char *fp = (unsigned char *)uc->uc_mcontext.fpregs;
	__get_cpuid_count(0xd, 9, &a, &b, &c, &d);
	if (!fp || !b)
		return;
	uint64_t bv;
	memcpy(&bv, fp + 512, 8);
	bv |= 1ull << 9;
	memcpy(fp + 512, &bv, 8);
	memset(fp + b, 0, 4);
}

static int attempt(void)
{
	char buf[64] = { 0 };
	struct sigaction sa = { .sa_sigaction = open_all, .sa_flags = SA_SIGINFO };
	sigaction(SIGUSR1, &sa, NULL);
	raise(SIGUSR1);
	memcpy(buf, pit_secret, sizeof(PIT_SECRET));
	return pit_copy_outcome(0, 0, buf);
}

int main(void)
{
	struct pit p = { "forged sigreturn frame", attempt, NULL, MPK_LOCK_ERRNO,
			 { B(O_LEAKED), B(O_FAULT) }, { B(O_LEAKED), B(O_FAULT) },
			 "unblockable without CET shadow stacks" };
	return pit_main(&p);
}
