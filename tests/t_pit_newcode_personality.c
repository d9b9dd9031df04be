/* Pitfall: personality(READ_IMPLIES_EXEC), then a plain
 * PROT_READ|PROT_WRITE mapping, which the kernel makes executable without
 * the PROT_EXEC bit the filter looks for.  After lockdown a personality
 * that adds READ_IMPLIES_EXEC is denied (EPERM, MPK_LOCK_ERRNO). */
#include "t_newcode.h"
#include <sys/personality.h>

static int attempt(void)
{
	if (personality(READ_IMPLIES_EXEC) == -1)
		return pit_copy_outcome(-1, errno, NULL);
	return newcode_call_rw();
}

int main(void)
{
	struct pit p = { "READ_IMPLIES_EXEC, then rw-", attempt, NULL, MPK_LOCK_ERRNO,
			 { B(O_LEAKED), B(O_SIGILL) }, { B(O_EPERM), B(O_EPERM) },
			 "adding READ_IMPLIES_EXEC is denied" };
	return pit_main(&p);
}
