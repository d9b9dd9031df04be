/*
 * A file mapped into a domain after mpk_lockdown() is covered as adopted
 * memory is: mprotect, munmap, madvise and mmap(MAP_FIXED) of it from
 * outside mpkit fail with EPERM (MPK_LOCK_ERRNO), while mpkit still
 * changes its rights (closed: a read faults).  Given back, its range
 * stays mpkit's, reserved: the program's mmap() asked for that address
 * lands elsewhere and all its calls there work; a second file of that size
 * takes the kept range instead of stacking a filter of its own.
 */
#include "t_pit.h"
#include "../src/core/core.h"

int main(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	mpk_domain *d;
	int fd;

	REQUIRE((d = mpk_domain_create("late-file", MPK_RW, 0)));
	REQUIRE((fd = memfd_create("late-file", 0)) >= 0);
	REQUIRE(ftruncate(fd, 2 * (off_t)page) == 0);
	t_segv_recorder_install(); /* for t_read_in_child() after the lockdown */
	REQUIRE(mpk_lockdown(MPK_LOCK_ERRNO) == 0);

	unsigned char *f = mpk_map_file(d, fd, 0, 2 * page);
	REQUIRE(f);
	CHECK(mpk_domain_of(f) == d);
	f[0] = 7;
	CHECK_ERR(mprotect(f, page, PROT_READ), EPERM);
	CHECK_ERR(munmap(f + page, page), EPERM);
	CHECK_ERR(madvise(f, page, MADV_DONTNEED), EPERM);
	CHECK(mmap(f, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
		      MAP_FAILED &&
	      errno == EPERM);
	CHECK(f[0] == 7);
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	struct t_fault flt = t_read_in_child(f);
	CHECK(flt.faulted);
	REQUIRE(mpk_set(d, MPK_RW) == 0);

	size_t kept = mpk__window_kept();
	CHECK(mpk_free(d, f) == 0);
	CHECK(mpk__window_kept() == kept + 2 * page);
	unsigned char *mine = mmap(f, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(mine != MAP_FAILED);
	CHECK(mine != f); /* still mpkit's */
	mine[0] = 1;
	CHECK(mprotect(mine, 2 * page, PROT_READ) == 0);
	CHECK(madvise(mine, 2 * page, MADV_DONTNEED) == 0);
	CHECK(munmap(mine, 2 * page) == 0);

	unsigned char *g = mpk_map_file(d, fd, 0, 2 * page);
	REQUIRE(g);
	CHECK(g[0] == 7); /* the file's byte */
	CHECK(mpk__window_kept() == kept); /* on the kept range */
	CHECK_ERR(mprotect(g, page, PROT_READ), EPERM);
	CHECK(mpk_free(d, g) == 0);
	t_exit_locked();
}
