/* Pitfall: mprotect(PROT_EXEC) then mprotect(PROT_READ).  On hw the first
 * moves the page to the kernel's execute-only key, the second to key 0: the
 * domain's key is gone.  On soft any mprotect() opens it.  After lockdown
 * both are denied (PROT_EXEC anywhere, and domain memory): EPERM. */
#include "t_pit.h"

static int attempt(void)
{
	char buf[64] = { 0 };
	if (mprotect(pit_secret, 4096, PROT_EXEC) || mprotect(pit_secret, 4096, PROT_READ))
		return pit_copy_outcome(-1, errno, buf);
	memcpy(buf, pit_secret, sizeof(PIT_SECRET));
	return pit_copy_outcome(0, 0, buf);
}

int main(void)
{
	struct pit p = { "mprotect(EXEC) + (READ)", attempt, NULL, MPK_LOCK_ERRNO,
			 { B(O_LEAKED), B(O_LEAKED) }, { B(O_EPERM), B(O_EPERM) }, NULL };
	return pit_main(&p);
}
