/*
 * mpk_lockdown() refuses with EBUSY while an io_uring instance exists, and
 * changes nothing then (no lockdown in force, mprotect of domain memory
 * still allowed): a ring's descriptor, or only its mapping (the
 * descriptor closed: the ring lives while mapped).  Once the ring is gone
 * lockdown succeeds.
 */
#include "t_pit.h"
#include "t_uring.h"

int main(void)
{
	struct ring r;
	mpk_domain *d;
	unsigned char *p;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	t_need_lockdown(MPK_LOCK_ERRNO);
	REQUIRE((d = mpk_domain_create("busy", MPK_RW, 0)));
	REQUIRE((p = mpk_alloc(d, page)));
	const char *why = uring_absent();
	if (why)
		t_skip(why);
	REQUIRE(ring_init(&r, 0, 0) == 0);
	CHECK_ERR(mpk_lockdown(MPK_LOCK_ERRNO), EBUSY);
	CHECK_ERR(mpk_lockdown_flags(), ENOENT);
	close(r.fd); /* mapped still */
	CHECK_ERR(mpk_lockdown(MPK_LOCK_ERRNO), EBUSY);
	CHECK_ERR(mpk_lockdown_flags(), ENOENT);
	CHECK(mprotect(p, page, PROT_READ | PROT_WRITE) == 0); /* nothing applied */
	munmap(r.map[0], r.map_len[0]);
	munmap(r.map[1], r.map_len[1]);
	CHECK(mpk_lockdown(MPK_LOCK_ERRNO) == 0);
	CHECK(mpk_lockdown_flags() == (int)MPK_LOCK_ERRNO);
	CHECK_ERR(mprotect(p, page, PROT_READ), EPERM);
	t_exit_locked();
}
