/*
 * The lockdown filter covers domain memory and nothing else: two ranges
 * adopted one page apart stay two ranges, and the page between them, the
 * program's, can still be mprotect()ed, madvise()d and unmapped after
 * mpk_lockdown(), while both ranges are denied (EPERM, MPK_LOCK_ERRNO).
 * What a filter covers stays mpkit's for good, so a gap it took in would
 * be lost to the program: a thread stack or mapping placed there later
 * could not be used.
 */
#include "t_pit.h"

int main(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	mpk_domain *d;

	REQUIRE((d = mpk_domain_create("gap", MPK_RW, 0)));
	unsigned char *m = mmap(NULL, 5 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(m != MAP_FAILED);
	REQUIRE(mpk_adopt(d, m, 2 * page) == 0);
	REQUIRE(mpk_adopt(d, m + 3 * page, 2 * page) == 0);
	unsigned char *gap = m + 2 * page;
	REQUIRE(mpk_lockdown(MPK_LOCK_ERRNO) == 0);

	CHECK_ERR(mprotect(m, page, PROT_READ), EPERM);
	CHECK_ERR(mprotect(m + 4 * page, page, PROT_READ), EPERM);
	CHECK_ERR(mprotect(m + page, 2 * page, PROT_READ), EPERM); /* touches one */
	gap[0] = 1;
	CHECK(mprotect(gap, page, PROT_READ) == 0);
	CHECK(mprotect(gap, page, PROT_READ | PROT_WRITE) == 0);
	CHECK(madvise(gap, page, MADV_DONTNEED) == 0);
	CHECK(gap[0] == 0);
	CHECK(munmap(gap, page) == 0);
	CHECK(mmap(gap, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == gap);
	CHECK(munmap(gap, page) == 0);
	t_exit_locked();
}
