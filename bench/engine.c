/* SPDX-License-Identifier: MIT */
/*
 * The measurements: the parent.  It plans (what runs where, what fits in
 * memory), forks one child per backend (hw, where the CPU has keys, then
 * soft; each sets MPKIT_BACKEND before its first mpkit call: group.c) and
 * collects the samples the children write into shared memory, then their
 * statistics.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef MPKIT_BENCH_SODIUM
#include <sodium.h>
#endif

#include "engine.h"

void bench_config_defaults(struct bench_config *c)
{
	static const size_t sizes[] = { 4u << 10, 64u << 10, 2u << 20, 64u << 20, 1u << 30 };
	static const int threads[] = { 0, 1, 2, 4 };

	memset(c, 0, sizeof(*c));
	memcpy(c->sizes, sizes, sizeof(sizes));
	c->nsizes = sizeof(sizes) / sizeof(sizes[0]);
	memcpy(c->threads, threads, sizeof(threads));
	c->nthreads = sizeof(threads) / sizeof(threads[0]);
	c->reps = 15;
	c->sample_ns = 5e6;
	c->pin = 1;
	c->mem_fraction = 0.7;
}

void bench__group_fail(struct bench_results *r, int group, const char *why)
{
	for (int m = 0; m < BM_COUNT; m++) {
		if (bench_methods[m].group != group)
			continue;
		for (int s = 0; s < r->cfg.nsizes; s++) {
			struct bench_setup *st = bench_setup(r, m, s);
			if (st->status != BS_NOT_RUN)
				continue;
			st->status = BS_FAILED;
			snprintf(st->why, sizeof(st->why), "%s", why);
		}
	}
}

/* ---------------------------------------------------------------- parent */

/* Everything the children write lives in one shared mapping. */
static void *shared_alloc(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* Run fn in a child; a description of how it ended if not well. */
static int in_child(void (*fn)(struct bench_results *, int), struct bench_results *r, int arg, char *why,
		    size_t whylen)
{
	int st;

	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(why, whylen, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		fn(r, arg);
		fflush(NULL);
		_exit(0);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			snprintf(why, whylen, "waitpid: %s", strerror(errno));
			return -1;
		}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (WIFSIGNALED(st))
		snprintf(why, whylen, "the measuring process died of signal %d (%s)", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
	else
		snprintf(why, whylen, "the measuring process exited with status %d", WEXITSTATUS(st));
	return -1;
}

/* In a child: what mpkit itself reports (it must not run in the parent). */
static void child_probe(struct bench_results *r, int arg)
{
	struct bench_machine *mc = &r->machine;
	struct mpk_info in;

	(void)arg;
	unsetenv("MPKIT_BACKEND");
	memset(&in, 0, sizeof(in));
	mpk_info(&in);
	mc->cpu_pku = in.cpu_pku;
	mc->cpu_ospke = in.cpu_ospke;
	mc->kernel_pkeys = in.kernel_pkeys;
	mc->auto_backend = in.backend;
	snprintf(mc->mpkit_version, sizeof(mc->mpkit_version), "%s", mpk_version());
}

/* Decide what is not available and what does not fit, before measuring. */
static void plan(struct bench_results *r)
{
	const struct bench_config *cfg = &r->cfg;
	struct bench_machine *mc = &r->machine;

	for (int si = 0; si < cfg->nsizes; si++) {
		size_t size = cfg->sizes[si];
		int napplicable = 0;
		for (int m = 0; m < BM_COUNT; m++) {
			struct bench_setup *st = bench_setup(r, m, si);
			const struct bench_method_info *mi = &bench_methods[m];
			st->huge_kb = st->huge_kb_after = st->locked_kb = -1;
			if (mi->group == BG_HW && !mc->hw_available) {
				st->status = BS_NA;
				if (!mc->cpu_pku)
					snprintf(st->why, sizeof(st->why), "not available on this CPU");
				else if (!mc->cpu_ospke)
					snprintf(st->why, sizeof(st->why), "not available: the kernel did not enable PKU (OSPKE)");
				else
					snprintf(st->why, sizeof(st->why), "not available: the kernel hands out no keys");
			} else if (mi->thp && (size < HUGE_2M || size % HUGE_2M)) {
				st->status = BS_NA;
				snprintf(st->why, sizeof(st->why), "n/a: a huge page is 2 MiB");
			} else if (m == BM_SODIUM && !mc->sodium_version[0]) {
				st->status = BS_NA;
				snprintf(st->why, sizeof(st->why),
					 "not built: libsodium was not found at build time (install libsodium-dev, rebuild)");
			} else if (mi->group == BG_SOFT) {
				napplicable++;
			}
		}
		double usable = mc->mem_avail * cfg->mem_fraction;
		char sz[32], us[32], need[32];
		bench_size_str(size, sz, sizeof(sz));
		bench_size_str((size_t)usable, us, sizeof(us));
		bench_size_str(size * (size_t)(napplicable ? napplicable : 1), need, sizeof(need));
		if ((double)size > usable) {
			for (int m = 0; m < BM_COUNT; m++) {
				struct bench_setup *st = bench_setup(r, m, si);
				if (st->status != BS_NOT_RUN)
					continue;
				st->status = BS_SKIPPED;
				snprintf(st->why, sizeof(st->why), "skipped: %s does not fit in %s (%.0f%% of available memory)",
					 sz, us, cfg->mem_fraction * 100);
			}
			snprintf(r->size_note[si], sizeof(r->size_note[si]),
				 "%s skipped: capped by free memory (%s usable = %.0f%% of MemAvailable)", sz, us,
				 cfg->mem_fraction * 100);
			r->batch_max[si] = 0;
			continue;
		}
		int fit = (int)(usable / (double)size);
		r->batch_max[si] = fit < BM_COUNT ? fit : BM_COUNT;
		if (napplicable > r->batch_max[si])
			snprintf(r->size_note[si], sizeof(r->size_note[si]),
				 "%s: %d regions need %s at once, %s usable: measured %d at a time", sz, napplicable,
				 need, us, r->batch_max[si]);
	}
}

/* The shared mapping: the results, their cells and setups, the samples. */
static size_t results_len(const struct bench_config *cfg)
{
	size_t ncells = (size_t)BM_COUNT * cfg->nsizes * cfg->nthreads;
	size_t nsetups = (size_t)BM_COUNT * cfg->nsizes;

	return sizeof(struct bench_results) + ncells * sizeof(struct bench_cell) +
	       nsetups * sizeof(struct bench_setup) + ncells * 4 * cfg->reps * sizeof(double);
}

static struct bench_results *results_alloc(const struct bench_config *cfg)
{
	size_t ncells = (size_t)BM_COUNT * cfg->nsizes * cfg->nthreads;
	size_t nsetups = (size_t)BM_COUNT * cfg->nsizes;
	char *mem = shared_alloc(results_len(cfg));

	if (!mem)
		return NULL;
	struct bench_results *r = (struct bench_results *)mem;
	r->cfg = *cfg;
	r->cells = (struct bench_cell *)(mem + sizeof(*r));
	r->setups = (struct bench_setup *)(r->cells + ncells);
	double *samples = (double *)(r->setups + nsetups);
	for (size_t i = 0; i < ncells; i++) {
		r->cells[i].sw = samples + (4 * i + 0) * cfg->reps;
		r->cells[i].touch = samples + (4 * i + 1) * cfg->reps;
		r->cells[i].base = samples + (4 * i + 2) * cfg->reps;
		r->cells[i].raw = samples + (4 * i + 3) * cfg->reps;
	}
	return r;
}

/* 0, or -1 for a configuration the engine cannot run. */
static int config_check(struct bench_config *cfg)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (cfg->nsizes < 1 || cfg->nsizes > BENCH_MAX_SIZES || cfg->nthreads < 1 ||
	    cfg->nthreads > BENCH_MAX_THREADS || cfg->reps < 1 || cfg->reps > BENCH_MAX_REPS)
		return -1;
	for (int i = 0; i < cfg->nsizes; i++)
		if (!cfg->sizes[i] || cfg->sizes[i] % page)
			return -1;
	for (int i = 0; i < cfg->nthreads; i++)
		if (cfg->threads[i] < 0 || cfg->threads[i] > BENCH_MAX_BUSY)
			return -1;
	if (cfg->mem_fraction <= 0 || cfg->mem_fraction > 1)
		cfg->mem_fraction = 0.7;
	return 0;
}

/* The machine, what mpkit finds on it (in a child), the hw fast path. */
static void probe_machine(struct bench_results *r)
{
	struct bench_machine *mc = &r->machine;
	char why[200];

	bench_machine_probe(mc);
	mc->page = (size_t)sysconf(_SC_PAGESIZE);
	mc->timer_ns = bench__timer_cost();
	if (in_child(child_probe, r, 0, why, sizeof(why)))
		snprintf(mc->mpkit_version, sizeof(mc->mpkit_version), "?");
	mc->hw_available = mc->cpu_pku && mc->cpu_ospke && mc->kernel_pkeys;
	mc->pinned = r->cfg.pin && mc->cpus_allowed >= 2;
#ifdef MPKIT_BENCH_SODIUM
	snprintf(mc->sodium_version, sizeof(mc->sodium_version), "%s", sodium_version_string());
#endif
	bench_progress("reading the hw fast path from the binary");
	bench_fastpath_probe(&r->fastpath, r->cfg.exe_label);
}

/* A child per backend; one that died leaves cells unfilled: say so. */
static void run_groups(struct bench_results *r)
{
	char why[200];

	if (r->machine.hw_available && in_child(bench__run_group, r, BG_HW, why, sizeof(why))) {
		snprintf(r->group_error[BG_HW], sizeof(r->group_error[BG_HW]), "%s", why);
		bench_progress_done();
	}
	if (in_child(bench__run_group, r, BG_SOFT, why, sizeof(why))) {
		snprintf(r->group_error[BG_SOFT], sizeof(r->group_error[BG_SOFT]), "%s", why);
		bench_progress_done();
	}
	if (!r->machine.hw_available) {
		r->nochange[BG_HW].status = BS_NA;
		snprintf(r->nochange[BG_HW].why, sizeof(r->nochange[BG_HW].why), "not available on this CPU");
	}
	for (int g = 0; g < 2; g++)
		if (r->group_error[g][0])
			bench__group_fail(r, g, r->group_error[g]);
}

/* A cell's statistics, or the status of its setup if it has no samples. */
static void cell_stats(const struct bench_results *r, int m, int s, int t)
{
	const struct bench_setup *st = bench_setup(r, m, s);
	struct bench_cell *c = bench_cell(r, m, s, t);

	if (st->status != BS_OK || c->status != BS_OK) {
		if (c->status == BS_OK || c->status == BS_NOT_RUN)
			c->status = st->status == BS_OK ? BS_FAILED : st->status;
		return;
	}
	bench__stat(&c->s_sw, c->sw, c->n);
	bench__stat(&c->s_touch, c->touch, c->n);
	bench__stat(&c->s_base, c->base, c->n);
	if (bench_methods[m].backend_row) {
		double q[BENCH_MAX_REPS];
		bench__stat(&c->s_raw, c->raw, c->n);
		for (int i = 0; i < c->n; i++)
			q[i] = c->raw[i] > 0 ? c->sw[i] / c->raw[i] : 0;
		bench__stat(&c->s_pair, q, c->n);
	}
}

/* Statistics, then each cell's ratio to the reference switch. */
static void statistics(struct bench_results *r)
{
	const struct bench_config *cfg = &r->cfg;

	for (int m = 0; m < BM_COUNT; m++)
		for (int s = 0; s < cfg->nsizes; s++)
			for (int t = 0; t < cfg->nthreads; t++)
				cell_stats(r, m, s, t);
	for (int m = 0; m < BM_COUNT; m++)
		for (int s = 0; s < cfg->nsizes; s++)
			for (int t = 0; t < cfg->nthreads; t++) {
				struct bench_cell *c = bench_cell(r, m, s, t);
				struct bench_cell *ref = bench_cell(r, r->ref_method, s, t);
				if (c->status == BS_OK && ref->status == BS_OK && ref->s_sw.median > 0)
					c->ratio = c->s_sw.median / ref->s_sw.median;
			}
}

struct bench_results *bench_run(const struct bench_config *cfg_in)
{
	struct bench_config cfg = *cfg_in;

	if (config_check(&cfg)) {
		errno = EINVAL;
		return NULL;
	}
	struct bench_results *r = results_alloc(&cfg);
	if (!r)
		return NULL;
	double t0 = now_ns();

	bench_progress_start(cfg.quiet);

	probe_machine(r);
	plan(r);
	r->ref_method = r->machine.hw_available ? BM_HW_SET : BM_SOFT_SET;
	run_groups(r);
	statistics(r);
	r->seconds = (now_ns() - t0) / 1e9;
	bench_progress_done();
	return r;
}

void bench_free(struct bench_results *r)
{
	if (r)
		munmap(r, results_len(&r->cfg));
}
