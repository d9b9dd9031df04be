/* Pitfall: pkey_free() of the domain's key and pkey_alloc(): the same key
 * comes back, open for the caller, while the pages still carry it.  After
 * lockdown pkey_free (and pkey_alloc) fail with EPERM.  soft: no key. */
#include "t_pit.h"

static int attempt(void)
{
	char buf[64] = { 0 };
	int k = mpk_domain_key(pit_dom);
	if (k < 0)
		return O_NA;
	if (syscall(SYS_pkey_free, k))
		return pit_copy_outcome(-1, errno, buf);
	long k2 = syscall(SYS_pkey_alloc, 0, 0);
	if (k2 != k)
		return k2 < 0 ? pit_copy_outcome(-1, errno, buf) : O_KEPT;
	memcpy(buf, pit_secret, sizeof(PIT_SECRET));
	return pit_copy_outcome(0, 0, buf);
}

int main(void)
{
	struct pit p = { "pkey_free + pkey_alloc", attempt, NULL, MPK_LOCK_ERRNO,
			 { B(O_LEAKED), B(O_NA) }, { B(O_EPERM), B(O_NA) }, NULL };
	return pit_main(&p);
}
