/*
 * A window added after mpk_lockdown() (domain memory past the windows
 * reserved before it) is covered like the first ones: the filter of its
 * own that mpkit stacks denies mprotect, munmap, madvise, mremap and
 * mmap(MAP_FIXED) of it from outside mpkit (EPERM with MPK_LOCK_ERRNO),
 * while mpkit itself still maps and gives back memory there.  Memory
 * outside the windows stays the program's.
 */
#include "t_pit.h"
#include "t_window.h"

int main(void)
{
	const size_t big = (size_t)9 << 30; /* PROT_NONE: no commit charge */
	size_t page = (size_t)t_page();
	mpk_domain *d;
	unsigned char *old, *p = NULL, *got[4];
	int n = 0;

	t_need_lockdown(MPK_LOCK_ERRNO);
	REQUIRE((d = mpk_domain_create("late", MPK_RW, 0)));
	REQUIRE((old = mpk_alloc(d, page)));
	int w0 = t_windows();
	REQUIRE(mpk_lockdown(MPK_LOCK_ERRNO) == 0);

	/* Grow: mpkit maps big units (through its own site) until one lands
	 * in a window made after lockdown. */
	while (n < 4 && !p) {
		REQUIRE((got[n] = mpk__window_map(big, 0, PROT_NONE)));
		if (mpk__window_of((uintptr_t)got[n]) >= w0)
			p = got[n];
		n++;
	}
	REQUIRE(p);
	CHECK(t_windows() > w0);
	printf("windows: %d before lockdown, %d after\n", w0, t_windows());
	unsigned char *guard = p + big; /* the unit's guard: reserved */
	CHECK(mpk__window_of((uintptr_t)guard) >= w0);
	CHECK(mpk_os_mprotect(p, page, PROT_READ | PROT_WRITE) == 0); /* mpkit's site */
	p[0] = 1;

	/* Anyone else: denied, on the mapped page and the reservation. */
	CHECK_ERR(mprotect(p, page, PROT_READ), EPERM);
	CHECK_ERR(mprotect(guard, page, PROT_READ | PROT_WRITE), EPERM);
	CHECK_ERR(munmap(p, page), EPERM);
	CHECK_ERR(madvise(p, page, MADV_DONTNEED), EPERM);
	CHECK(mmap(guard, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
		   0) == MAP_FAILED && errno == EPERM);
	CHECK(p[0] == 1);
	CHECK_ERR(mprotect(old, page, PROT_READ), EPERM); /* the first window too */

	/* Outside the windows: the program's own. */
	void *mine = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(mine != MAP_FAILED);
	CHECK(mprotect(mine, page, PROT_READ) == 0);
	CHECK(munmap(mine, page) == 0);

	while (n--)
		mpk__window_unmap(got[n], big); /* mpkit gives them back */
	CHECK(mpk_free(d, old) == 0);
	t_exit_locked();
}
