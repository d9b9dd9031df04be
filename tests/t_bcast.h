/*
 * Broadcast tests: counting the signals mpkit sends, and a domain no other
 * thread ever opens.
 */
#ifndef MPK_TEST_BCAST_H
#define MPK_TEST_BCAST_H

#include "t.h"

/* Internal, from libmpkit.a: signals sent, system calls, /proc scans. */
void mpk__broadcast_counters(uint64_t c[3]);
uint64_t mpk__broadcast_skipped(void);

static inline uint64_t t_signals_sent(void)
{
	uint64_t c[3];
	mpk__broadcast_counters(c);
	return c[0];
}

/* A domain only this thread opens: created (RW here), written, closed in
 * every thread, destroyed (its key revoked in every thread).  No other
 * thread holds its key open, so none needs a signal. */
static inline void t_unrelated_domain(void)
{
	mpk_domain *u = mpk_domain_create("unrelated", MPK_RW, 0);
	REQUIRE(u);
	unsigned char *p = mpk_alloc(u, 4096);
	REQUIRE(p);
	p[0] = 1;
	REQUIRE(mpk_set_all(u, MPK_NONE) == 0);
	REQUIRE(mpk_domain_destroy(u) == 0);
}

#endif
