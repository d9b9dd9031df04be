/* SPDX-License-Identifier: MIT */
/*
 * One broadcast's cost (see mpkit-bench-broadcast): other threads blocked
 * in read(), known to mpkit or not; time, and the broadcasting thread's
 * signals, system calls and /proc scans per broadcast.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <mpkit.h>

#include "bcast.h"
#include "timing.h"

#define RUNS_MAX 32

static int fds[2] = { -1, -1 };

static void *blocked(void *arg)
{
	char c;
	if (arg && mpk_init()) /* known to mpkit */
		return NULL;
	while (read(fds[0], &c, 1) < 0)
		;
	return NULL;
}

static int start(pthread_t *th, int n, int known)
{
	for (int i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, blocked, known ? (void *)1 : NULL))
			return -1;
	usleep(20000); /* all blocked in read() */
	return 0;
}

static void stop(pthread_t *th, int n)
{
	for (int i = 0; i < n; i++)
		if (write(fds[1], "x", 1) != 1)
			abort();
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
}

int bench_bcast_measure(int n, int iters, int runs, struct bench_bcast *r)
{
	pthread_t th[BENCH_BCAST_MAXT];
	double v[RUNS_MAX];
	uint64_t c0[3], c1[3], c2[3];
	int rc = 0;

	if (n < 1 || n > BENCH_BCAST_MAXT || runs < 1 || runs > RUNS_MAX || iters < 1 ||
	    (fds[0] < 0 && pipe(fds)))
		return -1;
	/* unknown threads: the first broadcast finds them by a scan */
	if (start(th, n, 0))
		abort();
	double t0 = now_ns() / 1e3;
	rc |= mpk__broadcast(0, 0);
	r->first_us = now_ns() / 1e3 - t0;
	stop(th, n);

	if (start(th, n, 1))
		abort();
	/* The protocol's cost: every thread signalled, as when all must
	 * change; then the same broadcasts with the skip (all hold it). */
	mpk__broadcast_noskip(1);
	rc |= mpk__broadcast(0, 0); /* warm */
	mpk__broadcast_counters(c0);
	for (int k = 0; k < runs; k++) {
		t0 = now_ns() / 1e3;
		for (int i = 0; i < iters; i++)
			rc |= mpk__broadcast(0, 0);
		v[k] = (now_ns() / 1e3 - t0) / iters;
	}
	mpk__broadcast_counters(c1);
	mpk__broadcast_noskip(0);
	for (int i = 0; i < iters; i++)
		rc |= mpk__broadcast(0, 0);
	mpk__broadcast_counters(c2);
	stop(th, n);
	r->held_signals = (double)(c2[0] - c1[0]) / iters;
	r->held_syscalls = (double)(c2[1] - c1[1]) / iters;
	qsort(v, (size_t)runs, sizeof(*v), cmp_double);
	r->us = v[runs / 2];
	double total = (double)runs * iters;
	r->signals = (double)(c1[0] - c0[0]) / total;
	r->syscalls = (double)(c1[1] - c0[1]) / total;
	r->scans = (double)(c1[2] - c0[2]) / total;
	return rc ? -1 : 0;
}
