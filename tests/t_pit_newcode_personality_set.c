/* Pitfall: READ_IMPLIES_EXEC set before lockdown: every readable mapping
 * made after it is executable, PROT_EXEC or not.  mpk_lockdown() refuses
 * (EBUSY) while the personality has it. */
#include "t_newcode.h"
#include <sys/personality.h>

static void setup(void)
{
	personality(READ_IMPLIES_EXEC);
}

static int attempt(void)
{
	return newcode_call_rw();
}

int main(void)
{
	struct pit p = { "READ_IMPLIES_EXEC of before", attempt, setup, MPK_LOCK_ERRNO,
			 { B(O_LEAKED), B(O_SIGILL) }, { B(O_REFUSED), B(O_REFUSED) },
			 "lockdown refuses (EBUSY) while it is set" };
	return pit_main(&p);
}
