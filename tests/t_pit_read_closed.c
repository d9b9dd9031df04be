/* Pitfall claimed by the README: "read() into a closed buffer bypasses
 * keys".  The truth, recorded: the kernel's copy to user memory honours the
 * thread's PKRU (EFAULT) on hw, and PROT_NONE on soft.  Here the row's
 * LEAKED would mean the kernel wrote the attacker's bytes into the closed
 * domain. */
#include "t_pit.h"

static int attempt(void)
{
	int fds[2];
	char check[64] = { 0 };
	if (pipe(fds) || write(fds[1], "OVERWRITE", 10) != 10)
		return O_ERROR;
	long rc = read(fds[0], pit_secret, 10);
	int e = errno;
	if (rc < 0)
		return pit_copy_outcome(-1, e, check);
	MPK_WITH(pit_dom, MPK_READ) memcpy(check, pit_secret, 10);
	return memcmp(check, "OVERWRITE", 10) ? O_KEPT : O_LEAKED;
}

int main(void)
{
	struct pit p = { "read() into closed buffer", attempt, NULL, MPK_LOCK_ERRNO,
			 { B(O_EFAULT), B(O_EFAULT) }, { B(O_EFAULT), B(O_EFAULT) },
			 "README's claim is wrong" };
	return pit_main(&p);
}
