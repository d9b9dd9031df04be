/* MPKIT_BACKEND=hw on a machine with protection keys: the hw backend runs,
 * forced, and a domain holds a hardware key whose faults are SEGV_PKUERR.
 * Skips where the machine has no keys (t_env_hw_unavailable covers that). */
#include "t_env.h"

int main(void)
{
	struct mpk_info i;

	if (!t_machine_has_keys())
		t_skip("this machine has no protection keys (no pku/ospke in /proc/cpuinfo)");
	REQUIRE(setenv("MPKIT_BACKEND", "hw", 1) == 0);
	REQUIRE(unsetenv("MPKIT_KEYS") == 0);
	CHECK(mpk_init() == 0);
	CHECK(mpk_backend() == MPK_BACKEND_HW);
	REQUIRE(mpk_info(&i) == 0);
	CHECK(i.backend == MPK_BACKEND_HW && i.backend_forced && i.kernel_pkeys);
	CHECK(i.key_budget == 15);

	mpk_domain *d = mpk_domain_create("env-hw", MPK_RW, 0);
	REQUIRE(d);
	int key = mpk_domain_key(d);
	CHECK(key >= 1 && key <= 15);
	unsigned char *p = mpk_alloc(d, 1);
	REQUIRE(p);
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	struct t_fault f = t_read_in_child(p);
	CHECK(f.faulted && f.code == SEGV_PKUERR && f.pkey == key && f.where == p);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
