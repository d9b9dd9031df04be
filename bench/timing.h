/* SPDX-License-Identifier: MIT */
/* The benchmarks' one clock (wall: CLOCK_MONOTONIC; CPU: this thread's), and a median. */
#ifndef MPK_BENCH_TIMING_H
#define MPK_BENCH_TIMING_H

#include <stdlib.h>
#include <time.h>

static inline double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

/* This thread's CPU time: on a machine shared with other work, wall
 * time says more about the others than about the code measured. */
static inline double cpu_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Sorts v. */
static inline double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
