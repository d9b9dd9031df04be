/* SPDX-License-Identifier: MIT */
/* The core's services for the layers above that need its state (core.h). */
#include "internal.h"

bool mpk__domain_valid(const mpk_domain *d)
{
	return mpk__domain_ok(d);
}
