/* Pitfall: stepping over the call gate.  With the trap flag set (popf, any
 * code can), a jump onto one of mpkit's WRPKRU sites with EAX 0 traps after
 * the WRPKRU, before its check; a SIGTRAP handler moves the thread past the
 * check, and sigreturn keeps the PKRU the WRPKRU loaded.  The handler is
 * installed before the lockdown, and again in the attempt.  After
 * mpk_lockdown() SIGTRAP is back to its default action and cannot be given
 * another (EPERM): the first trap ends the process.  On soft there is no
 * WRPKRU: SIGILL before; after, the trap on the site kills first. */
#include "t_gate.h"

static void on_trap(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	if (gate_ip(uc) == gate_site + 3) /* the WRPKRU ran, the check did not */
		gate_land(uc);
}

static void install(void)
{
	struct sigaction sa = { .sa_sigaction = on_trap, .sa_flags = SA_SIGINFO };
	sigaction(SIGTRAP, &sa, NULL);
}

static int attempt(void)
{
	install(); /* after lockdown: EPERM, the default action stays */
	gate_site = pit_mpkit_site(0);
	gate_jump(gate_site, true);
}

int main(void)
{
	struct pit p = { "trap flag over the check", attempt, install, MPK_LOCK_ERRNO,
			 { B(O_LEAKED), B(O_SIGILL) }, { B(O_TRAPPED), B(O_TRAPPED) },
			 "SIGTRAP's action is frozen at its default" };
	return pit_main(&p);
}
