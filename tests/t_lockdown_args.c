/* mpk_lockdown()'s argument checks: unknown flags fail with EINVAL and
 * lock nothing; before a lockdown mpk_lockdown_flags() says ENOENT; a scan
 * that finds gadgets refuses with EPERM and locks nothing either. */
#include "t_pit.h"
#include <sys/prctl.h>

int main(void)
{
	t_need_lockdown(MPK_LOCK_ERRNO);
	CHECK_ERR(mpk_lockdown_flags(), ENOENT);
	CHECK_ERR(mpk_lockdown(0x80000000u), EINVAL);
	CHECK_ERR(mpk_lockdown(0x100u), EINVAL);
	CHECK_ERR(mpk_lockdown_flags(), ENOENT);
	/* glibc's pkey_set is a WRPKRU gadget: a refusing scan refuses */
	CHECK_ERR(mpk_lockdown(MPK_LOCK_SCAN | MPK_LOCK_ERRNO), EPERM);
	CHECK_ERR(mpk_lockdown_flags(), ENOENT);
	CHECK(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1); /* nothing applied */
	void *x = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(x != MAP_FAILED);
	CHECK(mpk_lockdown(MPK_LOCK_ERRNO) == 0);
	CHECK(mpk_lockdown_flags() == MPK_LOCK_ERRNO);
	CHECK(mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED);
	CHECK(errno == EPERM);
	CHECK_ERR(mpk_lockdown(0), EALREADY);
	t_exit_locked();
}
