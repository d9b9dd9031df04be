/* SPDX-License-Identifier: MIT */
/* The core's services for the layers above that need its state (core.h). */
#include "internal.h"

bool mpk__domain_valid(const mpk_domain *d)
{
	return mpk__domain_ok(d);
}

int mpk__rights_of(const mpk_domain *d)
{
	int k = __atomic_load_n(&d->key, __ATOMIC_ACQUIRE);

	if (k >= 0)
		return mpk_arch_key_rights(mpk_arch_reg_read(), k);
	return mpk__soft_get(d);
}
