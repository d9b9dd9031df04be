/* Pitfall: process_vm_readv() of the secret by the process itself.  The
 * kernel's remote copy ignores protection keys (hw: out it comes); on soft
 * the page is PROT_NONE and the copy fails.  Lockdown denies the call; this
 * test uses the default action: the process is killed (SIGSYS). */
#include "t_pit.h"
#include <sys/uio.h>

static int attempt(void)
{
	char buf[64] = { 0 };
	struct iovec l = { buf, sizeof(PIT_SECRET) }, r = { pit_secret, sizeof(PIT_SECRET) };
	long rc = process_vm_readv(getpid(), &l, 1, &r, 1, 0);
	return pit_copy_outcome(rc, errno, buf);
}

int main(void)
{
	struct pit p = { "process_vm_readv(self)", attempt, NULL, 0,
			 { B(O_LEAKED), B(O_EFAULT) }, { B(O_KILLED), B(O_KILLED) }, NULL, t_process_vm_absent,
			 { B(O_EFAULT), B(O_EFAULT) } };
	return pit_main(&p);
}
