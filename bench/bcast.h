/* SPDX-License-Identifier: MIT */
/* One broadcast's cost, shared by mpkit-bench-broadcast and bench --scale. */
#ifndef MPK_BENCH_BCAST_H
#define MPK_BENCH_BCAST_H

#include <stdint.h>

/* mpk__broadcast() and its counters: internal, from libmpkit.a. */
#include "../src/core/testing.h"

#define BENCH_BCAST_MAXT 16

struct bench_bcast {
	double us;       /* one broadcast to known threads: median of the runs */
	double first_us; /* the first one to threads that never called mpkit */
	double signals, syscalls, scans; /* per broadcast, broadcasting thread */
	double held_signals, held_syscalls; /* the same, all holding the target */
};

/* n (1..BENCH_BCAST_MAXT) other threads blocked in read(), runs samples of
 * iters broadcasts each.  On a machine without keys, call
 * mpk__broadcast_stub(1) first.  0, or -1 when a broadcast failed. */
int bench_bcast_measure(int n, int iters, int runs, struct bench_bcast *r);

#endif
