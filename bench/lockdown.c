/* SPDX-License-Identifier: MIT */
/*
 * mpkit-bench-lockdown: what mpk_lockdown() costs a daemon.
 *
 *   lockdown      the time mpk_lockdown() takes, in a fresh child each
 *                 run, with D domains of R regions each (the filter's
 *                 ranges), without and with the gadget scan;
 *   the loop      MPK_WITH(d, MPK_READ) { read a byte } in the same
 *                 process before and after lockdown, and its ratio: on hw
 *                 no system call is made, so the filter cannot cost
 *                 anything; on soft each MPK_WITH is two mprotect() calls,
 *                 which now pass the filter (from mpkit's own site);
 *   getppid       one system call outside mpkit, before and after: the
 *                 filter's cost per call.
 *
 *   mpkit-bench-lockdown [--smoke]
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <mpkit.h>
#include "bench.h"
#include "options.h"
#include "timing.h"

#define RUNS 9

static double median_of(const double *v, int n)
{
	struct bench_stat st;
	bench__stat(&st, v, n);
	return st.median;
}

/* ns per MPK_WITH. */
static double loop_ns(mpk_domain *d, volatile unsigned char *p, long iters)
{
	double t0 = now_ns();
	for (long i = 0; i < iters; i++)
		MPK_WITH(d, MPK_READ) (void)p[0];
	return (now_ns() - t0) / (double)iters;
}

static double syscall_ns(long iters)
{
	double t0 = now_ns();
	for (long i = 0; i < iters; i++)
		syscall(SYS_getppid);
	return (now_ns() - t0) / (double)iters;
}

/* In a child: v = loop before, loop after lockdown, getppid before, after. */
static int loop_child(long iters, long sys_iters, double v[4])
{
	int fds[2], st;
	if (pipe(fds))
		return -1;
	fflush(NULL);
	pid_t c = fork();
	if (c == 0) {
		mpk_domain *d = mpk_domain_create("loop", MPK_RW, 0);
		unsigned char *p = d ? mpk_alloc(d, 4096) : NULL;
		double r[4];
		if (!p || mpk_set(d, MPK_NONE))
			_exit(1);
		r[0] = loop_ns(d, p, iters);
		r[2] = syscall_ns(sys_iters);
		if (mpk_lockdown(MPK_LOCK_ERRNO))
			_exit(1);
		r[1] = loop_ns(d, p, iters);
		r[3] = syscall_ns(sys_iters);
		_exit(write(fds[1], r, sizeof(r)) != sizeof(r));
	}
	close(fds[1]);
	ssize_t n = read(fds[0], v, 4 * sizeof(double));
	close(fds[0]);
	waitpid(c, &st, 0);
	return n == 4 * sizeof(double) ? 0 : -1;
}

/* The time of mpk_lockdown(flags) with nd domains of nr regions, in a
 * child; its result comes back through a pipe.  -1 on failure. */
static double lockdown_ns(int nd, int nr, unsigned flags)
{
	int fds[2], st;
	double t = -1;

	if (pipe(fds))
		return -1;
	fflush(NULL);
	pid_t c = fork();
	if (c == 0) {
		if (freopen("/dev/null", "w", stderr) == NULL) /* the scan's report */
			_exit(1);
		for (int i = 0; i < nd; i++) {
			mpk_domain *d = mpk_domain_create("bench", MPK_NONE, 0);
			for (int j = 0; d && j < nr; j++)
				if (!mpk_alloc(d, 4096))
					break;
		}
		double t0 = now_ns();
		int rc = mpk_lockdown(flags);
		double dt = rc ? -1 : now_ns() - t0;
		if (write(fds[1], &dt, sizeof(dt)) != sizeof(dt))
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	if (read(fds[0], &t, sizeof(t)) != sizeof(t))
		t = -1;
	close(fds[0]);
	waitpid(c, &st, 0);
	return t;
}

int main(int argc, char **argv)
{
	int quick = 0, rc = bench_smoke_options(argv[0], "What mpk_lockdown() costs, and MPK_WITH before and after it.\n",
						argc, argv, &quick);
	if (rc >= 0)
		return rc;
	long iters = quick ? 2000 : 20000, sys_iters = quick ? 20000 : 200000;
	static const int shapes[][2] = { { 1, 1 }, { 10, 10 }, { 50, 3 } };

	if (mpk_init())
		return perror("mpk_init"), 1;
	printf("mpkit-bench-lockdown: backend %s; medians of %d runs\n\n", mpk_backend_name(mpk_backend()),
	       RUNS);
	printf("mpk_lockdown() time          domains x regions   no scan      with scan (report)\n");
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		double a[RUNS], b[RUNS];
		bench_progress("mpk_lockdown(), %d x %d", shapes[s][0], shapes[s][1]);
		for (int r = 0; r < RUNS; r++) {
			a[r] = lockdown_ns(shapes[s][0], shapes[s][1], MPK_LOCK_ERRNO);
			b[r] = lockdown_ns(shapes[s][0], shapes[s][1], MPK_LOCK_ERRNO | MPK_LOCK_SCAN_REPORT);
		}
		printf("                             %4d x %-4d       %8.1f us  %8.1f us\n", shapes[s][0],
		       shapes[s][1], median_of(a, RUNS) / 1e3, median_of(b, RUNS) / 1e3);
	}

	/* Before and after in one child, a fresh child per sample: the load of
	 * a shared machine changes slowly, so each ratio compares like with
	 * like; the medians are over samples. */
	double w0[RUNS], w1[RUNS], s0[RUNS], s1[RUNS], wr[RUNS], sr[RUNS];
	for (int r = 0; r < RUNS; r++) {
		double v[4];
		bench_progress("before and after, run %d of %d", r + 1, RUNS);
		if (loop_child(iters, sys_iters, v))
			return perror("loop"), 1;
		w0[r] = v[0], w1[r] = v[1], s0[r] = v[2], s1[r] = v[3];
		wr[r] = v[1] / v[0], sr[r] = v[3] / v[2];
	}
	bench_progress_done();
	printf("\n                             before       after        after/before (median of ratios)\n");
	printf("MPK_WITH(READ) { read }      %8.1f ns  %8.1f ns   %.3fx\n", median_of(w0, RUNS),
	       median_of(w1, RUNS), median_of(wr, RUNS));
	printf("getppid() (outside mpkit)    %8.1f ns  %8.1f ns   %.3fx\n", median_of(s0, RUNS),
	       median_of(s1, RUNS), median_of(sr, RUNS));
	return 0;
}
