/* SPDX-License-Identifier: MIT */
/*
 * Samples and their statistics: how many iterations a sample takes (so that
 * it lasts cfg.sample_ns), a sample of close + re-open, one of the first
 * touch after it, the median and p10..p90, and the cost of rights that do
 * not change.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

double bench__timer_cost(void)
{
	double best[31];
	for (int r = 0; r < 31; r++) {
		double t0 = now_ns();
		for (int i = 0; i < 100; i++)
			(void)now_ns();
		best[r] = (now_ns() - t0) / 101;
	}
	/* median */
	for (int i = 1; i < 31; i++)
		for (int j = i; j > 0 && best[j] < best[j - 1]; j--) {
			double x = best[j];
			best[j] = best[j - 1];
			best[j - 1] = x;
		}
	return best[15];
}

static long iters_for(double one_ns, double target_ns)
{
	if (target_ns <= 0 || one_ns <= 0)
		return 1;
	double k = ceil(target_ns / one_ns);
	return k < 1 ? 1 : k > 1e6 ? 1000000 : (long)k;
}

void bench__calibrate(struct slot *s, const struct bench_config *cfg, double timer)
{
	double pair = 1e300, cycle = 1e300;

	bench__pairs(s, 2); /* warm up */
	for (int i = 0; i < 3; i++) {
		double t = (double)bench__pairs(s, 1);
		pair = t < pair ? t : pair;
		double t0 = now_ns();
		bench__touch(s);
		t = (now_ns() - t0);
		cycle = t < cycle ? t : cycle;
	}
	cycle += pair + 2 * timer;
	s->k_sw = iters_for(pair, cfg->sample_ns);
	s->k_touch = iters_for(cycle, cfg->sample_ns);
}

double bench__sample_switch(struct slot *s)
{
	return (double)bench__pairs(s, s->k_sw) / (double)s->k_sw;
}

double bench__sample_touch(struct slot *s, int after_switch, double timer)
{
	double sum = 0;
	for (long i = 0; i < s->k_touch; i++) {
		if (after_switch)
			bench__pairs(s, 1);
		double t0 = now_ns();
		bench__touch(s);
		sum += (now_ns() - t0) - timer;
	}
	sum /= (double)s->k_touch;
	return sum < 0 ? 0 : sum;
}

static double quantile(const double *sorted, int n, double q)
{
	if (n <= 0)
		return 0;
	double pos = q * (n - 1);
	int i = (int)pos;
	if (i >= n - 1)
		return sorted[n - 1];
	return sorted[i] + (pos - i) * (sorted[i + 1] - sorted[i]);
}

void bench__stat(struct bench_stat *st, const double *v, int n)
{
	double tmp[BENCH_MAX_REPS];
	if (n > BENCH_MAX_REPS)
		n = BENCH_MAX_REPS;
	memcpy(tmp, v, (size_t)n * sizeof(double));
	qsort(tmp, (size_t)n, sizeof(double), cmp_double);
	st->median = quantile(tmp, n, 0.5);
	st->p10 = quantile(tmp, n, 0.1);
	st->p90 = quantile(tmp, n, 0.9);
}

/* Rights that do not change: mpk_set(RW) on RW, enter(RW)+leave on RW. */
void bench__measure_nochange(struct bench_results *r, int group, struct slot *s)
{
	struct bench_nochange *nc = &r->nochange[group];
	struct mpk_stats a, b;
	int reps = r->cfg.reps;
	double *x = calloc((size_t)reps, sizeof(double)), *y = calloc((size_t)reps, sizeof(double));
	int bad = 0;

	if (!x || !y) {
		free(x);
		free(y);
		nc->status = BS_FAILED;
		snprintf(nc->why, sizeof(nc->why), "out of memory");
		return;
	}
	double t0 = now_ns();
	for (int i = 0; i < 1000; i++)
		bad |= mpk_set(s->d, MPK_RW);
	double one = (now_ns() - t0) / 1000;
	long k = iters_for(one, r->cfg.sample_ns);
	if (k < 100)
		k = 100;
	mpk_stats_get(&a);
	for (int i = 0; i < reps; i++) {
		t0 = now_ns();
		for (long j = 0; j < k; j++)
			bad |= mpk_set(s->d, MPK_RW);
		x[i] = (now_ns() - t0) / (double)k;
		t0 = now_ns();
		for (long j = 0; j < k; j++) {
			mpk_scope sc = mpk_enter(s->d, MPK_RW);
			bad |= sc.saved;
			bad |= mpk_leave(&sc);
		}
		y[i] = (now_ns() - t0) / (double)k;
	}
	mpk_stats_get(&b);
	nc->calls = (unsigned long long)reps * (unsigned long long)k * 3;
	nc->mprotects = b.mprotect_calls - a.mprotect_calls;
	bench__stat(&nc->set_same, x, reps);
	bench__stat(&nc->enter_same, y, reps);
	nc->status = bad < 0 ? BS_FAILED : BS_OK;
	if (bad < 0)
		snprintf(nc->why, sizeof(nc->why), "a call failed");
	free(x);
	free(y);
}

