/* MPKIT_BACKEND=soft runs the soft backend on any machine, keys or not:
 * forced, no key taken, domains protected by mprotect (SEGV_ACCERR). */
#include "t_env.h"

int main(void)
{
	struct mpk_info i, j;

	REQUIRE(setenv("MPKIT_BACKEND", "soft", 1) == 0);
	REQUIRE(unsetenv("MPKIT_KEYS") == 0);
	CHECK(mpk_init() == 0);
	CHECK(mpk_backend() == MPK_BACKEND_SOFT);
	REQUIRE(mpk_info(&i) == 0);
	CHECK(i.backend == MPK_BACKEND_SOFT && i.backend_forced);

	mpk_domain *d = mpk_domain_create("env-soft", MPK_RW, 0);
	REQUIRE(d);
	CHECK_ERR(mpk_domain_key(d), ENOENT);
	REQUIRE(mpk_info(&j) == 0);
	CHECK(j.keys_in_use == 0 && j.domains == 1);
	CHECK(j.keys_free == i.keys_free); /* no key taken from the kernel */
	unsigned char *p = mpk_alloc(d, 1);
	REQUIRE(p);
	REQUIRE(mpk_set(d, MPK_READ) == 0);
	struct t_fault f = t_write_in_child(p);
	CHECK(f.faulted && f.code == SEGV_ACCERR && f.where == p);
	CHECK_NO_FAULT(t_read_in_child(p));
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
