/* SPDX-License-Identifier: MIT */
/*
 * Inside the benchmark engine (bench.h is its interface): the parent plans
 * and collects (engine.c), a child per backend measures (group.c) the
 * regions of the methods (methods.c), with samples and statistics
 * (sample.c), and checks a region's protection by touching it (probe.c).
 */
#ifndef MPK_BENCH_ENGINE_H
#define MPK_BENCH_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "mpkit.h"
#include "bench.h"
#include "options.h"
#include "timing.h"

#define HUGE_2M ((size_t)2 << 20)

/* ---- engine.c ---- */

/* Every setup of the group not measured yet failed, for why. */
void bench__group_fail(struct bench_results *r, int group, const char *why);

/* ---- group.c: a child measures one backend's methods ---- */
void bench__run_group(struct bench_results *r, int group);

/* ---- methods.c: one method's region at one size ---- */

/* What it closes, re-opens and touches. */
struct slot {
	int m;
	size_t size;
	char *base;              /* first chunk */
	size_t chunk, stride, n; /* n chunks of chunk bytes, stride apart */
	size_t page;
	void *res;               /* reservation to unmap */
	size_t res_len;
	mpk_domain *d;
	mpk_scope scope;
	void *sodium;
	long k_sw, k_touch;      /* iterations per switch and touch sample */
	unsigned long errors;
	int up;
};

/* Map, populate and verify the region of method m at size: 0, or -1 with
 * st saying why (then slot_down() undoes what was done). */
int bench__slot_up(struct slot *s, int m, size_t size, struct bench_setup *st);
void bench__slot_down(struct slot *s);
/* k close + re-open pairs of the method, timed as a block: ns. */
uint64_t bench__pairs(struct slot *s, long k);
/* For the mpkit rows: k mprotect pairs on the domain's region itself,
 * bypassing mpkit (which believes it open, as it is between pairs): ns. */
uint64_t bench__raw_pairs(struct slot *s, long k);

/* The first write to every page of the region.  Inline: the samples time
 * it, and a call would add to the time of a touch that refills nothing. */
static inline void bench__touch(const struct slot *s)
{
	char *base = s->base;
	size_t n = s->n, chunk = s->chunk, stride = s->stride, page = s->page;

	for (size_t i = 0; i < n; i++) {
		volatile char *c = base + i * stride;
		for (size_t off = 0; off < chunk; off += page)
			c[off]++;
	}
}

/* ---- probe.c ---- */

/* Does a read (write 0: into *val) or a write of v (write 1) at p fault?
 * 0 if not, else the fault's si_code (-1 if it had none). */
int bench__probe(volatile unsigned char *p, int write, int v, unsigned char *val);

/* ---- sample.c ---- */

/* What one clock read costs, ns. */
double bench__timer_cost(void);
/* How many iterations make a sample last cfg.sample_ns. */
void bench__calibrate(struct slot *s, const struct bench_config *cfg, double timer);
/* One sample: ns per close + re-open pair; ns of the first touch of every
 * page, after a close + re-open (after_switch) or after nothing. */
double bench__sample_switch(struct slot *s);
double bench__sample_touch(struct slot *s, int after_switch, double timer);
/* Rights that do not change, on s's domain: r->nochange[group]. */
void bench__measure_nochange(struct bench_results *r, int group, struct slot *s);

#endif
