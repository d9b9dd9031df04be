/* MPKIT_BACKEND with a value other than hw, soft or auto makes mpkit fail
 * to initialise with EINVAL: mpk_init, mpk_backend, mpk_domain_create and
 * the rest fail, nothing is set up, and it stays so. */
#include "t_env.h"

static void bogus(void *arg)
{
	(void)arg;
	t_check_init_fails(EINVAL);
}

int main(void)
{
	const char *values[] = {
		"bogus", "HW", "Soft", "AUTO", "hw ", " soft", "hardware", "1", "autox",
	};

	for (size_t i = 0; i < sizeof(values) / sizeof(*values); i++)
		T_IN_CHILD(bogus, values[i], values[i], NULL);
	return t_done();
}
