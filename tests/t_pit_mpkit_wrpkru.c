/* Pitfall: a jump onto one of mpkit's own WRPKRU sites with EAX = 0 (every
 * key open).  Each site compares EAX with the value mpkit computed right
 * after the write and exits (134) on a mismatch, before the caller runs
 * again: with or without lockdown.  On soft: SIGILL. */
#include "t_gate.h"

static int attempt(void)
{
	gate_jump(pit_mpkit_site(0), false);
}

int main(void)
{
	struct pit p = { "jump onto mpkit's WRPKRU", attempt, NULL, MPK_LOCK_ERRNO,
			 { B(O_CHECK), B(O_SIGILL) }, { B(O_CHECK), B(O_SIGILL) },
			 "the call gate, lockdown or not" };
	return pit_main(&p);
}
