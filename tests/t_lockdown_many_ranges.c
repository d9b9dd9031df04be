/*
 * The lockdown filter holds up to 150 ranges of domain memory that do not
 * touch (MPK_LOCK_MAX_RANGES, docs/threat-model.md): ranges adopted a page
 * apart, with the windows 160 in all, fail mpk_lockdown() with E2BIG, and
 * nothing changes (no filter, not locked); with 10 given back, 150 at most,
 * it succeeds.  Then the first, a middle and the last adopted range are
 * denied to mprotect() (EPERM), the pages between them and a range given
 * back are the program's, and mpkit's own PROT_EXEC on domain memory
 * (mpk_code_alloc(); soft: each write window) still passes the filter's
 * check of every range.  The jump over that check reached past 21 ranges
 * only: mpk_lockdown() failed with E2BIG from 22 on.
 */
#include <sys/prctl.h>

#include "t_code.h"
#include "t_pit.h"
#include "t_window.h"

#define TOTAL 160
#define GIVEN 10

static int count_range(const struct mpk_range *r, void *arg)
{
	(void)r;
	++*(int *)arg;
	return 0;
}

int main(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	mpk_domain *d, *jit;
	uint8_t *code;

	t_need_lockdown(MPK_LOCK_ERRNO);
	REQUIRE((d = mpk_domain_create("many", MPK_RW, 0)));
	REQUIRE((jit = mpk_domain_create("jit", MPK_READ, MPK_DOMAIN_SHARED)));
	REQUIRE((code = mpk_code_alloc(jit, page)));
	int listed = 0;
	mpk__ranges_each(count_range, &listed); /* the windows so far */
	REQUIRE(listed >= 1 && listed < TOTAL - GIVEN);
	int n = TOTAL - listed;

	/* Page 2i+1 is range i; the even pages are gaps. */
	unsigned char *m = mmap(NULL, (size_t)(2 * n + 1) * page, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(m != MAP_FAILED);
	for (int i = 0; i < n; i++)
		REQUIRE(mpk_adopt(d, m + (size_t)(2 * i + 1) * page, page) == 0);
	listed = 0;
	mpk__ranges_each(count_range, &listed);
	CHECK(listed == TOTAL);

	CHECK_ERR(mpk_lockdown(MPK_LOCK_ERRNO), E2BIG);
	CHECK_ERR(mpk_lockdown_flags(), ENOENT);
	CHECK(prctl(PR_GET_SECCOMP, 0, 0, 0, 0) == 0);

	/* Ten ranges near the end given back (unmapped). */
	unsigned char *given = m + (size_t)(2 * (n - 2) + 1) * page;
	for (int i = n - 1 - GIVEN; i < n - 1; i++)
		REQUIRE(mpk_free(d, m + (size_t)(2 * i + 1) * page) == 0);
	REQUIRE(mpk_lockdown(MPK_LOCK_ERRNO) == 0);
	CHECK(mpk_lockdown_flags() == MPK_LOCK_ERRNO);

	unsigned char *first = m + page, *mid = m + (size_t)(2 * (n / 2) + 1) * page,
		      *last = m + (size_t)(2 * (n - 1) + 1) * page;
	CHECK_ERR(mprotect(first, page, PROT_READ), EPERM);
	CHECK_ERR(mprotect(mid, page, PROT_READ), EPERM);
	CHECK_ERR(mprotect(last, page, PROT_READ), EPERM);
	CHECK(mprotect(m, page, PROT_READ) == 0);
	CHECK(mprotect(mid + page, page, PROT_READ) == 0);
	CHECK(mmap(given, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == given);

	/* mpkit's PROT_EXEC on domain memory: code rewritten and run (soft:
	 * r-x, rw-, r-x again), and new code memory. */
	MPK_WITH(jit, MPK_RW)
		t_emit_ret(code, 42);
	__builtin___clear_cache((char *)code, (char *)code + 16);
	CHECK(((t_fn)code)() == 42);
	CHECK(mpk_code_alloc(jit, page) != NULL);
	t_exit_locked();
}
