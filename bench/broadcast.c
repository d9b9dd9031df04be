/* SPDX-License-Identifier: MIT */
/*
 * mpkit-bench-broadcast: what one broadcast (the all-thread PKRU rewrite
 * behind mpk_set_all(), revocation and eviction) costs with 1..16 other
 * threads blocked in read(), and how many signals and system calls it
 * makes.  On a machine without keys the protocol runs with its frame edit
 * stubbed (mpk__broadcast_stub): signals, handlers, futex acknowledgements
 * and the registry are real, only the XSAVE edit is skipped.
 *
 *   known     every thread has called mpkit (it is in the registry);
 *   unknown   threads that never called mpkit, first broadcast: the
 *             kernel counts more threads than the registry holds, so it
 *             scans /proc/self/task (each thread then registers itself);
 *   held      known threads that hold the target already: a broadcast
 *             leaves them alone (hw; the stub signals everyone), so this
 *             counts its signals and system calls when nobody must change.
 *
 * The first two rows signal every thread (mpk__broadcast_noskip): the
 * cost of reaching a thread that must change.
 *
 * Medians of RUNS runs; per-thread cost is the total over the thread count.
 *
 *   mpkit-bench-broadcast [--quick]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpkit.h>

/* Internal, from libmpkit.a (hidden in the .so). */
int mpk__broadcast(uint32_t clear, uint32_t set);
void mpk__broadcast_stub(int on);
void mpk__broadcast_counters(uint64_t c[3]);
void mpk__broadcast_noskip(int on);

#define RUNS 9
#define MAXT 16

static int fds[2];

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void *blocked(void *arg)
{
	char c;
	if (arg)
		mpk_init(); /* known to mpkit */
	while (read(fds[0], &c, 1) < 0)
		;
	return NULL;
}

struct row {
	double us, first_us;
	double signals, syscalls, scans;
	double held_signals, held_syscalls;
};

static void start(pthread_t *th, int n, int known)
{
	for (int i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, blocked, known ? (void *)1 : NULL))
			abort();
	usleep(20000); /* all blocked in read() */
}

static void stop(pthread_t *th, int n)
{
	for (int i = 0; i < n; i++)
		if (write(fds[1], "x", 1) != 1)
			abort();
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
}

static struct row measure(int n, int iters)
{
	pthread_t th[MAXT];
	double v[RUNS];
	uint64_t c0[3], c1[3], c2[3];
	struct row r;

	/* unknown threads: the first broadcast finds them by a scan */
	start(th, n, 0);
	double t0 = now_us();
	if (mpk__broadcast(0, 0))
		abort();
	r.first_us = now_us() - t0;
	stop(th, n);

	start(th, n, 1);
	mpk__broadcast(0, 0); /* warm */
	mpk__broadcast_counters(c0);
	for (int k = 0; k < RUNS; k++) {
		t0 = now_us();
		for (int i = 0; i < iters; i++)
			if (mpk__broadcast(0, 0))
				abort();
		v[k] = (now_us() - t0) / iters;
	}
	mpk__broadcast_counters(c1);
	mpk__broadcast_noskip(0);
	for (int i = 0; i < iters; i++)
		if (mpk__broadcast(0, 0))
			abort();
	mpk__broadcast_noskip(1);
	mpk__broadcast_counters(c2);
	r.held_signals = (double)(c2[0] - c1[0]) / iters;
	r.held_syscalls = (double)(c2[1] - c1[1]) / iters;
	stop(th, n);
	qsort(v, RUNS, sizeof(*v), cmp);
	r.us = v[RUNS / 2];
	double total = (double)RUNS * iters;
	r.signals = (double)(c1[0] - c0[0]) / total;
	r.syscalls = (double)(c1[1] - c0[1]) / total;
	r.scans = (double)(c1[2] - c0[2]) / total;
	return r;
}

int main(int argc, char **argv)
{
	int iters = argc > 1 && !strcmp(argv[1], "--quick") ? 20 : 200;
	static const int counts[] = { 1, 2, 4, 8, 16 };

	if (pipe(fds) || mpk_init())
		return 1;
	mpk__broadcast_stub(mpk_backend() != MPK_BACKEND_HW);
	mpk__broadcast_noskip(1);
	printf("broadcast, backend %s%s; other threads blocked in read()\n",
	       mpk_backend_name(mpk_backend()),
	       mpk_backend() != MPK_BACKEND_HW ? " (frame edit stubbed)" : "");
	printf("%7s %10s %10s %9s %9s %9s %12s %9s %9s %9s\n", "threads", "us/bcast", "us/thread",
	       "signals", "syscalls", "scans", "first(scan)", "ratio", "held:sig", "held:sys");
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		struct row r = measure(counts[i], iters);
		printf("%7d %10.2f %10.2f %9.2f %9.2f %9.2f %12.2f %8.1fx %9.2f %9.2f\n", counts[i],
		       r.us, r.us / counts[i], r.signals, r.syscalls, r.scans, r.first_us,
		       r.first_us / r.us, r.held_signals, r.held_syscalls);
	}
	printf("signals, syscalls, scans: per broadcast, by the broadcasting thread;\n"
	       "each target also makes rt_sigreturn, and the last one a futex wake.\n"
	       "first(scan): the first broadcast to threads that never called mpkit (us),\n"
	       "ratio: first(scan) / us/bcast;\n"
	       "held:sig, held:sys: per broadcast when every thread holds the target already\n");
	return 0;
}
