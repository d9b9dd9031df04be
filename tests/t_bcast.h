/*
 * Broadcast tests: counting the signals mpkit sends, and a domain no other
 * thread ever opens.
 */
#ifndef MPK_TEST_BCAST_H
#define MPK_TEST_BCAST_H

#include "t.h"
#include "../src/core/testing.h" /* the broadcast counters */

uint64_t t_signals_sent(void);

/* A domain only this thread opens: created (RW here), written, closed in
 * every thread, destroyed (its key revoked in every thread).  No other
 * thread holds its key open, so none needs a signal. */
void t_unrelated_domain(void);

#endif
