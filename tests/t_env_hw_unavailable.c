/* MPKIT_BACKEND=hw on a machine without usable protection keys: mpkit
 * fails to initialise with ENOTSUP (and mpk_info says soft would run).
 * Skips where the machine has keys (t_env_hw covers that). */
#include "t_env.h"

int main(void)
{
	struct mpk_info i;

	if (t_machine_has_keys())
		t_skip("this machine has protection keys (pku and ospke in /proc/cpuinfo)");
	REQUIRE(setenv("MPKIT_BACKEND", "hw", 1) == 0);
	REQUIRE(unsetenv("MPKIT_KEYS") == 0);
	t_check_init_fails(ENOTSUP);
	REQUIRE(setenv("MPKIT_BACKEND", "hw", 1) == 0);
	CHECK_ERR(mpk_info(&i), ENOTSUP);
	CHECK(i.backend == MPK_BACKEND_SOFT && !i.kernel_pkeys && i.keys_free == 0);
	return t_done();
}
