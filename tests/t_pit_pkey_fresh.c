/* Pitfall: pkey_alloc() of a fresh key (open for the caller) and
 * pkey_mprotect() of domain memory onto it.  hw: out it comes; soft: no key
 * to allocate.  After lockdown: pkey_alloc fails with EPERM. */
#include "t_pit.h"

static int attempt(void)
{
	char buf[64] = { 0 };
	long k = syscall(SYS_pkey_alloc, 0, 0);
	if (k < 0)
		return errno == EPERM ? O_EPERM : O_NA;
	if (syscall(SYS_pkey_mprotect, pit_secret, 4096, PROT_READ, k))
		return pit_copy_outcome(-1, errno, buf);
	memcpy(buf, pit_secret, sizeof(PIT_SECRET));
	return pit_copy_outcome(0, 0, buf);
}

int main(void)
{
	struct pit p = { "pkey_alloc + pkey_mprotect", attempt, NULL, MPK_LOCK_ERRNO,
			 { B(O_LEAKED), B(O_NA) }, { B(O_EPERM), B(O_EPERM) }, NULL };
	return pit_main(&p);
}
