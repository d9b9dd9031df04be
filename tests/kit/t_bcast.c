/* SPDX-License-Identifier: MIT */
#include "t_bcast.h"

uint64_t t_signals_sent(void)
{
	uint64_t c[3];
	mpk__broadcast_counters(c);
	return c[0];
}

void t_unrelated_domain(void)
{
	mpk_domain *u = mpk_domain_create("unrelated", MPK_RW, 0);
	REQUIRE(u);
	unsigned char *p = mpk_alloc(u, 4096);
	REQUIRE(p);
	p[0] = 1;
	REQUIRE(mpk_set_all(u, MPK_NONE) == 0);
	REQUIRE(mpk_domain_destroy(u) == 0);
}
