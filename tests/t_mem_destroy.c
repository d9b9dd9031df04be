/* Destroying a domain unmaps all its regions, allocated and adopted: no
 * domain owns them; allocated ones go back to the window's PROT_NONE
 * reservation (SEGV_ACCERR), adopted ones leave /proc/self/maps
 * (SEGV_MAPERR).  Other domains keep their memory, contents and rights. */
#include "t_state.h"

int main(void)
{
	size_t page = t_page();

	t_backend();
	mpk_domain *d = mpk_domain_create("destroy", MPK_RW, 0);
	mpk_domain *w = mpk_domain_create("bystander", MPK_RW, 0);
	REQUIRE(d && w);
	unsigned char *p = mpk_alloc(d, 3 * page);
	unsigned char *q = mpk_alloc(d, 1);
	unsigned char *m = t_map_anon(2);
	unsigned char *o = mpk_alloc(w, page);
	REQUIRE(p && q && o);
	REQUIRE(mpk_adopt(d, m, 2 * page) == 0);
	t_fill(o, page, 15);
	REQUIRE(mpk_set(w, MPK_READ) == 0);
	/* closed at destroy time, which must not matter */
	REQUIRE(mpk_set(d, MPK_NONE) == 0);

	CHECK(mpk_domain_destroy(d) == 0);

	/* Looked at first: a freed range is the kernel's to hand out again,
	 * and what the children below take (the allocator's memory, under
	 * the drop-in) may land there. */
	CHECK(!t_any_usable(p, 3 * page));
	CHECK(!t_any_usable(q, page));
	CHECK(!t_any_usable(m, 2 * page));
	struct t_fault f = t_read_in_child(p + 2 * page);
	CHECK(f.faulted && f.code == SEGV_ACCERR && f.where == p + 2 * page);
	f = t_write_in_child(q);
	CHECK(f.faulted && f.code == SEGV_ACCERR && f.where == q);
	f = t_read_in_child(m + page);
	CHECK(f.faulted && f.code == SEGV_MAPERR && f.where == m + page);
	CHECK_ERR(mpk_domain_of(p), ENOENT);
	CHECK_ERR(mpk_domain_of(q), ENOENT);
	CHECK_ERR(mpk_domain_of(m), ENOENT);

	CHECK(mpk_domain_of(o) == w);
	CHECK(t_intact(o, page, 15));
	CHECK_RIGHTS(w, o, MPK_READ);
	CHECK(mpk_domain_destroy(w) == 0);
	CHECK(!t_any_usable(o, page));
	return t_done();
}
