/* Pitfall: pkey_mprotect() of domain memory back to key 0, then a read.
 * Works on hw; a kernel without pkeys refuses any key (EINVAL: n/a on
 * soft).  After lockdown: EPERM. */
#include "t_pit.h"

static int attempt(void)
{
	char buf[64] = { 0 };
	if (syscall(SYS_pkey_mprotect, pit_secret, 4096, PROT_READ, 0))
		return errno == EINVAL ? O_NA : pit_copy_outcome(-1, errno, buf); /* no pkeys */
	memcpy(buf, pit_secret, sizeof(PIT_SECRET));
	return pit_copy_outcome(0, 0, buf);
}

int main(void)
{
	struct pit p = { "pkey_mprotect(key 0)", attempt, NULL, MPK_LOCK_ERRNO,
			 { B(O_LEAKED), B(O_NA) }, { B(O_EPERM), B(O_EPERM) }, NULL };
	return pit_main(&p);
}
