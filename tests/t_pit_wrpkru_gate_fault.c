/* Pitfall: a fault between a WRPKRU and the end of its check.  The page of
 * mpkit's failure path (where the check jumps on a mismatch) is made
 * non-executable; a jump onto a WRPKRU on another page with EAX 0 then
 * faults on fetching that path, PKRU already loaded, and a SIGSEGV handler
 * (installed before the lockdown, which freezes SIGSEGV's action as it is)
 * moves the thread on with that PKRU.  After mpk_lockdown() mpkit's gate
 * code cannot be re-protected or unmapped (EPERM).  On soft: SIGILL before.
 * n/a where every site shares the failure path's page. */
#include "t_gate.h"

static uintptr_t fail_page;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	if ((gate_ip(uc) & ~(uintptr_t)4095) != fail_page)
		_exit(O_FAULT);
	gate_land(uc);
}

static void install(void)
{
	struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO };
	sigaction(SIGSEGV, &sa, NULL);
}

static bool on_page(const void *f, uintptr_t page)
{
	return ((uintptr_t)f & ~(uintptr_t)4095) == page;
}

static int attempt(void)
{
	for (int i = 0; (gate_site = pit_mpkit_site(i)); i++) {
		uintptr_t fail = gate_fail_of(gate_site);
		if (!fail)
			return O_ERROR;
		fail_page = fail & ~(uintptr_t)4095;
		if (!on_page((void *)gate_site, fail_page) && !on_page((void *)gate_landing, fail_page) &&
		    !on_page((void *)on_segv, fail_page))
			break;
	}
	if (!gate_site)
		return O_NA;
	if (mprotect((void *)fail_page, 4096, PROT_READ))
		return errno == EPERM ? O_EPERM : O_ERROR;
	gate_jump(gate_site, false);
}

int main(void)
{
	struct pit p = { "fetch fault after WRPKRU", attempt, install, MPK_LOCK_ERRNO,
			 { B(O_LEAKED) | B(O_NA), B(O_SIGILL) | B(O_NA) },
			 { B(O_EPERM) | B(O_NA), B(O_EPERM) | B(O_NA) },
			 "mpkit's gate code stays mapped and executable" };
	return pit_main(&p);
}
