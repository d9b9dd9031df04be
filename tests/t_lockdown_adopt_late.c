/*
 * Memory adopted after mpk_lockdown() is covered as the windows are: the
 * filter mpkit stacks for it denies mprotect, munmap, madvise and
 * mmap(MAP_FIXED) of it from outside mpkit (EPERM with MPK_LOCK_ERRNO),
 * while mpkit still changes its rights (open: the write succeeds; closed
 * on soft: the protection follows).  A failed adopt leaves no filter:
 * memory that is not private anonymous read-write stays the program's.
 */
#include <sys/mman.h>

#include "t_pit.h"

int main(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	mpk_domain *d;

	t_need_lockdown(MPK_LOCK_ERRNO);
	REQUIRE((d = mpk_domain_create("adopted", MPK_RW, 0)));
	t_segv_recorder_install(); /* for t_read_in_child() after the lockdown */
	REQUIRE(mpk_lockdown(MPK_LOCK_ERRNO) == 0);

	unsigned char *p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *ro = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(p != MAP_FAILED && ro != MAP_FAILED);
	CHECK(mprotect(p, page, PROT_READ | PROT_WRITE) == 0); /* not domain memory yet */

	CHECK_ERR(mpk_adopt(d, ro, page), EINVAL); /* read-only: refused, nothing covered */
	CHECK(mprotect(ro, page, PROT_READ | PROT_WRITE) == 0);

	REQUIRE(mpk_adopt(d, p, page) == 0);
	CHECK(mpk_domain_of(p) == d);
	p[0] = 7; /* open: allowed */
	CHECK_ERR(mprotect(p, page, PROT_READ | PROT_WRITE | PROT_EXEC), EPERM);
	CHECK_ERR(mprotect(p, page, PROT_READ), EPERM);
	CHECK_ERR(munmap(p, page), EPERM);
	CHECK_ERR(madvise(p, page, MADV_DONTNEED), EPERM);
	CHECK(mmap(p, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
		      MAP_FAILED &&
	      errno == EPERM);
	CHECK(p[0] == 7);

	/* The page next to it was not adopted: still the program's. */
	CHECK(mprotect(p + page, page, PROT_READ) == 0);

	/* mpkit itself still changes the rights: closed, a read faults. */
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	struct t_fault f = t_read_in_child(p);
	CHECK(f.faulted);
	REQUIRE(mpk_set(d, MPK_RW) == 0);
	CHECK(p[0] == 7);
	t_exit_locked();
}
