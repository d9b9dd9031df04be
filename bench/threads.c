/* SPDX-License-Identifier: MIT */
/*
 * mpkit-bench-threads: what a rights change costs for one thread and for
 * every thread of the process, side by side with mprotect().
 *
 *   enter/leave   s = mpk_enter(d, NONE); mpk_leave(&s) on a domain holding
 *                 a key (hw) or on the soft backend (mprotect underneath);
 *   mprotect      mprotect(NONE) + mprotect(RW) of one 4 KiB page;
 *   set_all       mpk_set_all(d, NONE) + mpk_set_all(d, RW) with 1, 2, 4,
 *                 8, 16 threads in the process (the others blocked in
 *                 read(), as most threads of a server are), next to the
 *                 mprotect pair with the same threads alive;
 *   evict         enter/leave alternating two keyless domains with a key
 *                 budget of 1 (hw): every enter evicts the other domain
 *                 and re-keys this one (virtual domains).
 *
 * Medians of several runs, ns per pair, and ratios.  Public API only; the
 * backend is what MPKIT_BACKEND / the machine gives.
 *
 *   mpkit-bench-threads [--smoke] [--quiet]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <mpkit.h>

#include "options.h"
#include "output.h"
#include "timing.h"

#define RUNS 7

static double scale = 1.0;

static mpk_domain *d;
static unsigned char *page;

enum { M_ENTER, M_MPROTECT, M_SET_ALL, M_EVICT };
static mpk_domain *ev[2];

/* ns per pair, median of RUNS runs of iters pairs. */
static double measure(int m, long iters)
{
	static const char *const what[] = { "enter/leave", "mprotect pair", "set_all pair", "enter/leave evicting" };
	double v[RUNS];
	for (int r = 0; r < RUNS; r++) {
		bench_progress("%s, run %d of %d", what[m], r + 1, RUNS);
		double t0 = now_ns();
		for (long i = 0; i < iters; i++) {
			switch (m) {
			case M_ENTER: {
				mpk_scope s = mpk_enter(d, MPK_NONE);
				if (mpk_leave(&s)) {
					perror("mpk_leave");
					exit(1);
				}
				break;
			}
			case M_MPROTECT:
				mprotect(page, 4096, PROT_NONE);
				mprotect(page, 4096, PROT_READ | PROT_WRITE);
				break;
			case M_EVICT: {
				mpk_scope s = mpk_enter(ev[i & 1], MPK_RW);
				if (mpk_leave(&s)) {
					perror("mpk_leave");
					exit(1);
				}
				break;
			}
			case M_SET_ALL:
				if (mpk_set_all(d, MPK_NONE) || mpk_set_all(d, MPK_RW)) {
					perror("mpk_set_all");
					exit(1);
				}
				break;
			}
			__asm__ volatile("" ::: "memory");
		}
		v[r] = (now_ns() - t0) / (double)iters;
	}
	return median(v, RUNS);
}

static int pipefd[2];

static void *idle(void *arg)
{
	(void)arg;
	char c;
	while (read(pipefd[0], &c, 1) < 0)
		;
	return NULL;
}

static const char *me;
static int quiet;

/* Reads the options into scale: -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv)
{
	int smoke = 0;
	const struct bench_opt opts[] = {
		{ "smoke", 0, BO_FLAG, &smoke, NULL, "a tenth of the work: a correctness run" },
		{ "quiet", 'q', BO_FLAG, &quiet, NULL, "no progress on stderr" },
		{ "quick", 0, BO_FLAG, &smoke, NULL, NULL },
		{ NULL, 0 },
	};
	const struct bench_cli cli = {
		me = bench_prog(argv[0], "threads"),
		"Rights changes for one thread (mpk_enter/leave) and for all (mpk_set_all)\n"
		"with 1-16 threads, against mprotect; ns per pair, medians.\n",
		NULL, opts,
	};
	int rc = bench_options(&cli, argc, argv);

	scale = smoke ? 0.1 : 1.0;
	return rc;
}

/* The domain d with a page in it, the plain page and the idle threads'
 * pipe; 0, or -1 after saying what failed. */
static int setup(void)
{
	if (mpk_init()) {
		perror("mpk_init");
		return -1;
	}
	d = mpk_domain_create("bench-threads", MPK_RW, 0);
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *dm = d ? mpk_alloc(d, 4096) : NULL;
	if (!d || page == MAP_FAILED || !dm || pipe(pipefd)) {
		perror("setup");
		return -1;
	}
	page[0] = dm[0] = 1;
	return 0;
}

/* The eviction row (hw): enter/leave against e and the mprotect pair mp;
 * 0, or -1 after saying what failed. */
static int evict_row(double e, double mp)
{
	if (mpk_backend() != MPK_BACKEND_HW) {
		printf("%-34s %10s\n", "enter/leave, must evict", "n/a (soft: no keys)");
		return 0;
	}
	/* One key for three domains: each enter below evicts. */
	int budget_ok = mpk_set_key_budget(1) == 0;
	ev[0] = mpk_domain_create("bench-ev0", MPK_NONE, 0);
	ev[1] = mpk_domain_create("bench-ev1", MPK_NONE, 0);
	unsigned char *e0 = ev[0] ? mpk_alloc(ev[0], 4096) : NULL;
	unsigned char *e1 = ev[1] ? mpk_alloc(ev[1], 4096) : NULL;
	if (!budget_ok || !e0 || !e1) {
		perror("evict setup");
		return -1;
	}
	double ee = measure(M_EVICT, (long)(2000 * scale) + 10);
	printf("%-34s %10.1f  (%.1fx enter-leave, %.1fx mprotect pair)\n",
	       "enter/leave, must evict", ee, ee / e, ee / mp);
	/* Back to a keyed domain for the process-wide rows. */
	if (mpk_set_key_budget(15) || mpk_set(d, MPK_RW) || mpk_domain_key(d) < 0) {
		perror("re-key");
		return -1;
	}
	return 0;
}

/* The one-thread rows: enter/leave, the mprotect pair, eviction. */
static int one_thread_rows(void)
{
	double e = measure(M_ENTER, (long)(2000000 * scale));
	double mp = measure(M_MPROTECT, (long)(200000 * scale));
	printf("%-34s %10.1f\n", mpk_domain_key(d) >= 0 ? "enter/leave, domain with a key" : "enter/leave, soft domain", e);
	printf("%-34s %10.1f\n", "mprotect pair, 1 page", mp);
	printf("%-34s %10.3f  (mprotect / enter-leave: %.1fx)\n", "ratio enter-leave / mprotect",
	       e / mp, mp / e);
	return evict_row(e, mp);
}

/* The process-wide rows, 1 to 16 threads alive, then the idle threads let
 * go; 0, or -1 after saying what failed. */
static int all_threads_rows(void)
{
	static const int counts[] = { 1, 2, 4, 8, 16 };
	pthread_t th[16];
	int alive = 1;

	printf("\n%-8s %14s %14s %12s %14s\n", "threads", "set_all pair", "mprotect pair",
	       "set_all/mp", "per thread");
	for (size_t c = 0; c < sizeof(counts) / sizeof(*counts); c++) {
		while (alive < counts[c]) {
			if (pthread_create(&th[alive - 1], NULL, idle, NULL)) {
				perror("pthread_create");
				return -1;
			}
			alive++;
		}
		usleep(20000);
		double sa = measure(M_SET_ALL, (long)(2000 * scale) + 10);
		double m2 = measure(M_MPROTECT, (long)(200000 * scale));
		printf("%-8d %14.1f %14.1f %12.1f %14.1f\n", alive, sa, m2, sa / m2, sa / alive);
	}
	/* Let the idle threads go. */
	if (write(pipefd[1], "xxxxxxxxxxxxxxxx", 16) < 0)
		return -1;
	for (int i = 0; i < alive - 1; i++)
		pthread_join(th[i], NULL);
	return 0;
}

int main(int argc, char **argv)
{
	int rc = parse_args(argc, argv);

	if (rc >= 0)
		return rc;
	if (setup())
		return 1;
	printf("backend %s, ns per pair (median of %d runs)\n",
	       mpk_backend_name(mpk_backend()), RUNS);
	bench_progress_start(quiet);
	if (one_thread_rows() || all_threads_rows())
		return 1;
	bench_progress_done();
	return bench_output_ok(me) ? 0 : 1;
}
