/*
 * The filter's mremap rule at its edges: denied at an address in memory
 * executable at lockdown, allowed a page before and just past it.  The
 * executable mapping (two pages, anonymous r-x) straddles a 4 GiB line, so
 * its pieces fall under two high words (the rule compares the high word
 * once per run of ranges), with rw- pages on both sides.  MPK_LOCK_ERRNO:
 * a denial is EPERM, an allowed mremap of the same size returns the
 * address.
 */
#include "t_pit.h"
#include <sys/mman.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/* High word 0x7e90 below, 0x7e91 from; where TSan and ASan let a program
 * map too (TSan: 0x7e8000000000 up; ASan: past its shadow). */
#define LINE ((uintptr_t)0x7e9100000000ull)

static int remap(uintptr_t a)
{
	errno = 0;
	void *r = mremap((void *)a, 4096, 4096, 0);
	if (r == (void *)a)
		return 0;
	return r == MAP_FAILED ? errno : -1;
}

static void locked(void *arg)
{
	(void)arg;
	REQUIRE(mpk_lockdown(MPK_LOCK_ERRNO) == 0);
	CHECK(remap(LINE - 8192) == 0);    /* rw- before */
	CHECK(remap(LINE - 4096) == EPERM); /* r-x, high word 0x7e90 */
	CHECK(remap(LINE) == EPERM);        /* r-x, high word 0x7e91 */
	CHECK(remap(LINE + 4096) == 0);    /* rw- after */
	/* A fresh anonymous mapping grows and moves (a drop-in's realloc). */
	void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(m != MAP_FAILED);
	void *g = mremap(m, 4096, 1 << 24, MREMAP_MAYMOVE);
	CHECK(g != MAP_FAILED);
	t_exit_locked();
}

int main(void)
{
	t_need_lockdown(MPK_LOCK_ERRNO);
	unsigned char *p = mmap((void *)(LINE - 8192), 4 * 4096, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED || p != (unsigned char *)(LINE - 8192))
		t_skip("0x7e90ffffe000 is taken (or the kernel has no MAP_FIXED_NOREPLACE)");
	REQUIRE(mprotect(p + 4096, 8192, PROT_READ | PROT_EXEC) == 0);

	struct t_child c = t_child(locked, NULL, T_CHILD_CHECKS);
	CHECK(c.signal == 0);
	CHECK(c.exit_code == 0);
	return t_done();
}
