/* MPKIT_KEYS must be a number of keys from 1 to 15: 0, 16, abc and other
 * junk make mpkit fail to initialise with EINVAL, whatever the backend. */
#include "t_env.h"

static void bad(void *arg)
{
	(void)arg;
	t_check_init_fails(EINVAL);
}

int main(void)
{
	const char *values[] = {
		"0", "16", "abc", "-1", "3x", "0x3", " ", "1.5", "99999999999999999999",
	};

	for (size_t i = 0; i < sizeof(values) / sizeof(*values); i++) {
		T_IN_CHILD(bad, NULL, "soft", values[i]);
		T_IN_CHILD(bad, NULL, "auto", values[i]);
	}
	return t_done();
}
