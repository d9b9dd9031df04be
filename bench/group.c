/* SPDX-License-Identifier: MIT */
/*
 * A child's work: one backend's methods (MPKIT_BACKEND set before the first
 * mpkit call), size by size.  For one size it sets up a region per method
 * (as many as fit in memory at once: the parent's plan), populates it,
 * checks that closing it really makes it fault and re-opening it really
 * gives it back (methods.c), and then, for each count of other busy
 * threads, takes the samples round robin over the methods, so that a drift
 * of the machine hits them all alike:
 *   switch: k iterations of close + re-open, timed as a block;
 *   touch:  k iterations of close + re-open, then the first write to every
 *           page, only the writes timed (the TLB refill mprotect causes);
 *   base:   the same writes with no close/re-open before them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef MPKIT_BENCH_SODIUM
#include <sodium.h>
#endif

#include "engine.h"

/* ---------------------------------------------------------------- threads */

struct busy {
	pthread_t t;
	int cpu;
	char *buf;
};

static volatile int busy_stop;

/* Writes its own 256 KiB over and over: a thread that holds TLB entries
 * of this process on its CPU, so a shootdown has someone to reach. */
static void *busy_main(void *arg)
{
	struct busy *b = arg;
	const size_t len = 256 << 10;

	if (b->cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(b->cpu, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	while (!__atomic_load_n(&busy_stop, __ATOMIC_RELAXED))
		for (size_t off = 0; off < len; off += 4096)
			((volatile char *)b->buf)[off]++;
	return NULL;
}

static int busy_start(struct busy *b, int n, const struct bench_machine *mc)
{
	__atomic_store_n(&busy_stop, 0, __ATOMIC_RELAXED);
	for (int i = 0; i < n; i++) {
		b[i].cpu = mc->pinned ? mc->cpu_list[1 + i % (mc->cpus_allowed - 1)] : -1;
		b[i].buf = calloc(1, 256 << 10);
		if (!b[i].buf || pthread_create(&b[i].t, NULL, busy_main, &b[i])) {
			free(b[i].buf);
			__atomic_store_n(&busy_stop, 1, __ATOMIC_RELAXED);
			for (int j = 0; j < i; j++) {
				pthread_join(b[j].t, NULL);
				free(b[j].buf);
			}
			return -1;
		}
	}
	return 0;
}

static void busy_stop_all(struct busy *b, int n)
{
	__atomic_store_n(&busy_stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < n; i++) {
		pthread_join(b[i].t, NULL);
		free(b[i].buf);
	}
}

/* ---------------------------------------------------------------- a batch */

/* The regions of one size that exist at once, measured together. */
struct batch {
	struct bench_results *r;
	const char *gname;     /* "hw", "soft" */
	int si;                /* the size */
	char sz[32];
	struct slot *slots;    /* [BM_COUNT] */
	int live[BM_COUNT];    /* the methods whose region is up */
	int nlive;
};

/* Set up the regions of methods todo[0..n): those that fail say why. */
static void batch_up(struct batch *b, const int *todo, int n, int batch)
{
	bench_progress("%s %s: setting up %d region%s", b->gname, b->sz, n, n == 1 ? "" : "s");
	b->nlive = 0;
	for (int i = 0; i < n; i++) {
		int m = todo[i];
		struct bench_setup *st = bench_setup(b->r, m, b->si);
		st->batch = batch;
		if (bench__slot_up(&b->slots[m], m, b->r->cfg.sizes[b->si], st)) {
			bench__slot_down(&b->slots[m]);
			continue;
		}
		b->live[b->nlive++] = m;
	}
	/* Which mapping each region ended up in, now that all exist. */
	for (int i = 0; i < b->nlive; i++) {
		struct bench_setup *st = bench_setup(b->r, b->live[i], b->si);
		st->vma_kb = bench_vma_kb(b->slots[b->live[i]].base, &st->named);
	}
	for (int i = 0; i < b->nlive; i++)
		bench__calibrate(&b->slots[b->live[i]], &b->r->cfg, b->r->machine.timer_ns);
}

static void round_progress(const struct batch *b, int nt, const char *what, int rep)
{
	int reps = b->r->cfg.reps;

	if (rep % 4 == 0 || rep == reps - 1)
		bench_progress("%s %s, %d other thread%s: %s %d/%d", b->gname, b->sz, nt, nt == 1 ? "" : "s", what,
				rep + 1, reps);
}

/*
 * The samples with the thread count ti.  Round robin, starting one further
 * each round: no method always follows the same other one.  The mprotect
 * pairs on the mpkit rows' own regions come in a second pass: right after
 * the switch on the same region they would find its page tables in cache,
 * and every sample should start as cold as the others, after work on
 * another region.
 */
static void batch_rounds(struct batch *b, int ti)
{
	struct bench_results *r = b->r;
	int nt = r->cfg.threads[ti], nlive = b->nlive, *live = b->live;
	double timer = r->machine.timer_ns;
	struct busy busy[BENCH_MAX_BUSY];

	if (busy_start(busy, nt, &r->machine)) {
		for (int i = 0; i < nlive; i++)
			bench_cell(r, live[i], b->si, ti)->status = BS_FAILED;
		return;
	}
	for (int rep = 0; rep < r->cfg.reps; rep++) {
		round_progress(b, nt, "close+re-open", rep);
		for (int j = 0; j < nlive; j++) {
			int i = (j + rep) % nlive;
			bench_cell(r, live[i], b->si, ti)->sw[rep] = bench__sample_switch(&b->slots[live[i]]);
		}
		for (int j = 0; j < nlive; j++) {
			int i = (j + rep) % nlive;
			struct slot *sl = &b->slots[live[i]];
			if (bench_methods[live[i]].backend_row)
				bench_cell(r, live[i], b->si, ti)->raw[rep] =
					(double)bench__raw_pairs(sl, sl->k_sw) / (double)sl->k_sw;
		}
	}
	for (int rep = 0; rep < r->cfg.reps; rep++) {
		round_progress(b, nt, "first touch", rep);
		for (int j = 0; j < nlive; j++) {
			int i = (j + rep) % nlive;
			struct bench_cell *c = bench_cell(r, live[i], b->si, ti);
			c->touch[rep] = bench__sample_touch(&b->slots[live[i]], 1, timer);
			c->base[rep] = bench__sample_touch(&b->slots[live[i]], 0, timer);
		}
	}
	busy_stop_all(busy, nt);
	for (int i = 0; i < nlive; i++) {
		struct bench_cell *c = bench_cell(r, live[i], b->si, ti);
		c->n = r->cfg.reps;
		c->iters_switch = b->slots[live[i]].k_sw;
		c->iters_touch = b->slots[live[i]].k_touch;
		c->status = BS_OK;
	}
}

/* After the samples: huge pages left, failed calls; the regions go. */
static void batch_down(struct batch *b)
{
	for (int i = 0; i < b->nlive; i++) {
		struct bench_setup *st = bench_setup(b->r, b->live[i], b->si);
		struct slot *s = &b->slots[b->live[i]];
		st->huge_kb_after = bench_smaps_kb(s->base, s->chunk, "AnonHugePages");
		if (s->n > 1 && st->huge_kb_after >= 0)
			st->huge_kb_after *= (long)s->n;
		if (s->errors) {
			st->status = BS_FAILED;
			snprintf(st->why, sizeof(st->why), "%lu samples saw a failing call", s->errors);
		} else {
			st->status = BS_OK;
		}
	}
	for (int i = 0; i < b->nlive; i++)
		bench__slot_down(&b->slots[b->live[i]]);
}

/* ---------------------------------------------------------------- a child */

/* The backend asked for, and libsodium: 0, or -1 with every cell failed. */
static int start_backend(struct bench_results *r, int group, const char *gname)
{
	setenv("MPKIT_BACKEND", gname, 1);
	int want = group == BG_HW ? MPK_BACKEND_HW : MPK_BACKEND_SOFT;
	if (mpk_init() || mpk_backend() != want) {
		char why[160];
		snprintf(why, sizeof(why), "mpkit did not start the %s backend (%s)", gname,
			 errno ? strerror(errno) : "mpkit was initialised before bench_run()");
		bench__group_fail(r, group, why);
		r->nochange[group].status = BS_FAILED;
		snprintf(r->nochange[group].why, sizeof(r->nochange[group].why), "%s", why);
		return -1;
	}
#ifdef MPKIT_BENCH_SODIUM
	if (group == BG_SOFT && sodium_init() < 0) {
		for (int s = 0; s < r->cfg.nsizes; s++) {
			struct bench_setup *st = bench_setup(r, BM_SODIUM, s);
			if (st->status == BS_NOT_RUN) {
				st->status = BS_FAILED;
				snprintf(st->why, sizeof(st->why), "sodium_init() failed");
			}
		}
	}
#endif
	return 0;
}

static void pin_self(const struct bench_machine *mc)
{
	if (!mc->pinned)
		return;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(mc->cpu_list[0], &set);
	sched_setaffinity(0, sizeof(set), &set);
}

void bench__run_group(struct bench_results *r, int group)
{
	struct slot slots[BM_COUNT];
	struct batch b = { .r = r, .gname = group == BG_HW ? "hw" : "soft", .slots = slots };
	int nochange_done = 0;

	if (start_backend(r, group, b.gname))
		return;
	pin_self(&r->machine);
	memset(slots, 0, sizeof(slots));
	for (b.si = 0; b.si < r->cfg.nsizes; b.si++) {
		int todo[BM_COUNT], ntodo = 0;

		bench_size_str(r->cfg.sizes[b.si], b.sz, sizeof(b.sz));
		for (int m = 0; m < BM_COUNT; m++)
			if (bench_methods[m].group == group && bench_setup(r, m, b.si)->status == BS_NOT_RUN)
				todo[ntodo++] = m;
		int per = r->batch_max[b.si] > 0 ? r->batch_max[b.si] : 1;
		for (int b0 = 0, batch = 0; b0 < ntodo; b0 += per, batch++) {
			batch_up(&b, todo + b0, b0 + per < ntodo ? per : ntodo - b0, batch);
			/* Unchanged rights, once per backend, at the first size. */
			struct slot *set = &slots[group == BG_HW ? BM_HW_SET : BM_SOFT_SET];
			if (!nochange_done && set->up) {
				bench__measure_nochange(r, group, set);
				nochange_done = 1;
			}
			for (int ti = 0; ti < r->cfg.nthreads && b.nlive; ti++)
				batch_rounds(&b, ti);
			batch_down(&b);
		}
	}
	bench_progress_done();
}
