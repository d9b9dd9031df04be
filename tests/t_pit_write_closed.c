/* Pitfall: write() of a closed buffer to a pipe: the kernel's copy from
 * user memory honours PKRU (hw) and PROT_NONE (soft): EFAULT. */
#include "t_pit.h"

static int attempt(void)
{
	int fds[2];
	char buf[64] = { 0 };
	if (pipe(fds))
		return O_ERROR;
	long rc = write(fds[1], pit_secret, sizeof(PIT_SECRET));
	int e = errno;
	if (rc > 0 && read(fds[0], buf, sizeof(buf)) < 0)
		return O_ERROR;
	return pit_copy_outcome(rc, e, buf);
}

int main(void)
{
	struct pit p = { "write() from closed buffer", attempt, NULL, MPK_LOCK_ERRNO,
			 { B(O_EFAULT), B(O_EFAULT) }, { B(O_EFAULT), B(O_EFAULT) }, NULL };
	return pit_main(&p);
}
