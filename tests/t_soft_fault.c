/* Soft backend: a domain has no key (mpk_domain_key() is ENOENT) and a
 * forbidden access is a SIGSEGV with SEGV_ACCERR at the exact address
 * touched, for reads and writes, anywhere in any region. */
#include "t_state.h"

static void check(unsigned char *addr, int write)
{
	struct t_fault f = write ? t_write_in_child(addr) : t_read_in_child(addr);

	if (!f.faulted || f.code != SEGV_ACCERR || f.where != addr)
		t_fail("%s at %p: faulted %d si_code %d si_addr %p", write ? "write" : "read",
		       (void *)addr, f.faulted, f.code, f.where);
}

int main(void)
{
	size_t page = t_page();

	t_force_soft();
	mpk_domain *d = mpk_domain_create("soft-fault", MPK_RW, 0);
	REQUIRE(d);
	CHECK_ERR(mpk_domain_key(d), ENOENT);
	unsigned char *p = mpk_alloc(d, 3 * page);
	unsigned char *m = t_map_anon(1);
	REQUIRE(p);
	REQUIRE(mpk_adopt(d, m, page) == 0);
	CHECK_ERR(mpk_domain_key(d), ENOENT);

	const size_t offs[] = { 0, 1, page - 1, page, 2 * page + 77, 3 * page - 1 };
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	for (size_t i = 0; i < sizeof(offs) / sizeof(*offs); i++) {
		check(p + offs[i], 0);
		check(p + offs[i], 1);
	}
	check(m + 5, 0);
	check(m + page - 1, 1);

	REQUIRE(mpk_set(d, MPK_READ) == 0);
	for (size_t i = 0; i < sizeof(offs) / sizeof(*offs); i++) {
		CHECK_NO_FAULT(t_read_in_child(p + offs[i]));
		check(p + offs[i], 1);
	}
	CHECK_NO_FAULT(t_read_in_child(m));
	check(m, 1);

	REQUIRE(mpk_set(d, MPK_RW) == 0);
	CHECK_NO_FAULT(t_write_in_child(p + 3 * page - 1));
	CHECK_NO_FAULT(t_write_in_child(m));
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
