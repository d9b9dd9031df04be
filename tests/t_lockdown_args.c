/* mpk_lockdown()'s argument checks: unknown flags fail with EINVAL and
 * lock nothing; before a lockdown mpk_lockdown_flags() says ENOENT; a scan
 * that finds a gadget (an inline WRPKRU on a page of its own) refuses with
 * EPERM and locks nothing either. */
#include "t_pit.h"
#include <sys/prctl.h>

int main(void)
{
	t_need_lockdown(MPK_LOCK_ERRNO);
	CHECK_ERR(mpk_lockdown_flags(), ENOENT);
	CHECK_ERR(mpk_lockdown(0x80000000u), EINVAL);
	CHECK_ERR(mpk_lockdown(0x100u), EINVAL);
	CHECK_ERR(mpk_lockdown_flags(), ENOENT);
	/* xor %eax,%eax; xor %ecx,%ecx; xor %edx,%edx; wrpkru */
	static const unsigned char gadget[] = { 0x31, 0xc0, 0x31, 0xc9, 0x31, 0xd2, 0x0f, 0x01, 0xef };
	void *g = pit_plant(gadget, sizeof(gadget));
	REQUIRE(g);
	CHECK_ERR(mpk_lockdown(MPK_LOCK_SCAN | MPK_LOCK_ERRNO), EPERM);
	CHECK_ERR(mpk_lockdown_flags(), ENOENT);
	CHECK(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1); /* nothing applied */
	CHECK(munmap(g, 4096) == 0);
	void *x = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(x != MAP_FAILED);
	CHECK(mpk_lockdown(MPK_LOCK_ERRNO) == 0);
	CHECK(mpk_lockdown_flags() == MPK_LOCK_ERRNO);
	CHECK(t_mmap_sys(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED);
	CHECK(errno == EPERM);
	CHECK_ERR(mpk_lockdown(0), EALREADY);
	t_exit_locked();
}
