/* SPDX-License-Identifier: MIT */
/* The results as a table (stdout), CSV and JSON. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpkit.h"
#include "bench.h"
#include "json.h"

const char *bench_size_str(size_t b, char *buf, size_t len)
{
	static const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)b;
	int u = 0;
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (v == floor(v))
		snprintf(buf, len, "%.0f %s", v, unit[u]);
	else
		snprintf(buf, len, "%.1f %s", v, unit[u]);
	return buf;
}

const char *bench_ns_str(double ns, char *buf, size_t len)
{
	static const struct {
		double div;
		const char *unit;
	} u[] = { { 1, "ns" }, { 1e3, "us" }, { 1e6, "ms" }, { 1e9, "s" } };
	int i = 0;
	while (i < 3 && ns >= 999.5 * u[i].div)
		i++;
	double v = ns / u[i].div;
	snprintf(buf, len, v >= 99.95 ? "%.0f %s" : v >= 9.995 ? "%.1f %s" : "%.2f %s", v, u[i].unit);
	return buf;
}

/* "3.94..4.22 us", or "980 ns..1.02 us" across units */
static const char *range_str(double lo, double hi, char *buf, size_t len)
{
	char a[16], b[16];
	bench_ns_str(lo, a, sizeof(a));
	bench_ns_str(hi, b, sizeof(b));
	const char *ua = strchr(a, ' '), *ub = strchr(b, ' ');
	if (ua && ub && !strcmp(ua, ub))
		snprintf(buf, len, "%.*s..%s", (int)(ua - a), a, b);
	else
		snprintf(buf, len, "%s..%s", a, b);
	return buf;
}

/* Timings under a nanosecond are below what the clock can tell apart. */
static const char *small_ns_str(double ns, char *buf, size_t len)
{
	if (ns < 1)
		return snprintf(buf, len, "~0 ns"), buf;
	return bench_ns_str(ns, buf, len);
}

int bench_parse_size(const char *s, size_t *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || v <= 0)
		return -1;
	double mul = 1;
	switch (toupper((unsigned char)*end)) {
	case 'K': mul = 1024.0; end++; break;
	case 'M': mul = 1024.0 * 1024; end++; break;
	case 'G': mul = 1024.0 * 1024 * 1024; end++; break;
	case 'T': mul = 1024.0 * 1024 * 1024 * 1024; end++; break;
	}
	if (!strcasecmp(end, "iB") || !strcasecmp(end, "B"))
		end += strlen(end);
	if (*end)
		return -1;
	double b = v * mul;
	if (b > 1e15)
		return -1;
	*out = (size_t)b;
	return 0;
}

static const char *status_str(int st)
{
	switch (st) {
	case BS_OK: return "ok";
	case BS_NA: return "not_available";
	case BS_SKIPPED: return "skipped";
	case BS_FAILED: return "failed";
	}
	return "not_run";
}

static const char *si_code_name(int code, int *known)
{
	*known = 1;
	switch (code) {
	case 1: return "SEGV_MAPERR";
	case 2: return "SEGV_ACCERR";
	case 4: return "SEGV_PKUERR";
	}
	*known = 0;
	return "?";
}

/* "not available on this CPU", or why a cell has no numbers. */
static const char *why(const struct bench_results *r, int m, int s)
{
	const struct bench_setup *st = bench_setup(r, m, s);
	return st->why[0] ? st->why : status_str(st->status);
}

static const char *threads_label(int n, char *buf, size_t len)
{
	snprintf(buf, len, "%d other thread%s", n, n == 1 ? "" : "s");
	return buf;
}

/* ---------------------------------------------------------------- table */

/* The hw fast path's length, from the disassembly. */
static void print_fastpath(FILE *f, const struct bench_fastpath *fp)
{
	if (!fp->ok) {
		fprintf(f, "hw path:   instruction count unavailable: %s\n", fp->why);
		return;
	}
	fprintf(f, "hw path:   instructions on the straight-line path from entry to the first ret, from\n"
		   "           objdump -d %s (the path that changes rights; WRPKRU included):\n",
		fp->file);
	for (int i = 0; i < 3; i++) {
		if (!fp->fn[i].found) {
			fprintf(f, "             %-9s not found\n", fp->fn[i].name);
			continue;
		}
		fprintf(f, "             %-9s %3d instructions: %d RDPKRU, %d WRPKRU, %d conditional branches, "
			   "%d calls, %d syscalls, %d locked\n",
			fp->fn[i].name, fp->fn[i].insns, fp->fn[i].rdpkru, fp->fn[i].wrpkru,
			fp->fn[i].branches, fp->fn[i].calls, fp->fn[i].syscalls, fp->fn[i].locked);
	}
}

/* The other threads, and the CPUs they and the measuring one run on. */
static void print_threads_setup(FILE *f, const struct bench_results *r)
{
	const struct bench_machine *mc = &r->machine;
	const struct bench_config *c = &r->cfg;

	fprintf(f, "threads:   other busy threads (each writes its own 256 KiB: TLB shootdown targets):");
	for (int t = 0; t < c->nthreads; t++)
		fprintf(f, " %d", c->threads[t]);
	fprintf(f, "\n");
	if (!mc->pinned) {
		fprintf(f, "           not pinned (%s); with %d CPU%s, busy threads also take CPU time from the measuring one\n",
			c->pin ? "only one CPU allowed" : "--no-pin", mc->cpus_allowed, mc->cpus_allowed == 1 ? "" : "s");
		return;
	}
	fprintf(f, "           the measuring thread runs on CPU %d, the others round robin on the other %d CPU%s\n",
		mc->cpu_list[0], mc->cpus_allowed - 1, mc->cpus_allowed == 2 ? "" : "s");
	int maxt = 0;
	for (int t = 0; t < c->nthreads; t++)
		maxt = c->threads[t] > maxt ? c->threads[t] : maxt;
	if (maxt > mc->cpus_allowed - 1)
		fprintf(f, "           this machine has %d CPUs: a shootdown reaches at most %d other CPU%s, so\n"
			   "           more than %d other thread%s only share %s\n",
			mc->cpus_allowed, mc->cpus_allowed - 1, mc->cpus_allowed == 2 ? "" : "s",
			mc->cpus_allowed - 1, mc->cpus_allowed == 2 ? "" : "s",
			mc->cpus_allowed == 2 ? "it" : "them");
}

static void print_machine(FILE *f, const struct bench_results *r)
{
	const struct bench_machine *mc = &r->machine;
	const struct bench_config *c = &r->cfg;
	char a[32], b[32];

	fprintf(f, "mpkit bench %s: the cost of closing and re-opening a populated region\n",
		mc->mpkit_version);
	if (c->smoke || mc->emulated)
		fprintf(f, "\n  ** %s: the timings below mean nothing; this run checks that every method\n"
			   "  ** works (a closed region faults, a re-opened one is accessible), not how fast.\n\n",
			mc->emulated ? "EMULATED CPU (QEMU TCG)" : "SMOKE TEST");
	fprintf(f, "machine:   %s, %d CPU%s online%s, %s RAM, %s\n", mc->cpu, mc->ncpus, mc->ncpus == 1 ? "" : "s",
		mc->hypervisor ? " (virtual machine: hypervisor flag set)" : "",
		bench_size_str((size_t)mc->mem_total, a, sizeof(a)), mc->kernel);
	fprintf(f, "keys:      CPU PKU %s, OSPKE %s, kernel pkeys %s; mpkit picks the %s backend",
		mc->cpu_pku ? "yes" : "no", mc->cpu_ospke ? "yes" : "no", mc->kernel_pkeys ? "yes" : "no",
		mc->auto_backend == MPK_BACKEND_HW ? "hw" : "soft");
	fprintf(f, "%s\n", mc->hw_available ? " (protection keys)" : " (mprotect emulation); hw rows: not available on this CPU");
	print_fastpath(f, &r->fastpath);
	fprintf(f, "pages:     THP enabled [%s], defrag [%s]; 4 KiB rows use MADV_NOHUGEPAGE, THP rows MADV_HUGEPAGE\n"
		   "           on a 2 MiB-aligned mapping (AnonHugePages from /proc/self/smaps below)\n",
		mc->thp_enabled, mc->thp_defrag);
	if (mc->damon[0])
		fprintf(f, "DAMON:     running (%s): it ages and may reclaim pages in\n"
			   "           the background, so the regions it samples get slower page-table walks at\n"
			   "           random (the same-region pairs at the end cancel most of that)\n",
			mc->damon);
	fprintf(f, "libsodium: %s\n", mc->sodium_version[0] ? mc->sodium_version
				: "not built in (libsodium not found at build time): its rows are missing");
	print_threads_setup(f, r);
	if (c->sample_ns > 0)
		fprintf(f, "samples:   %d per cell, each the mean of k iterations (k so that a sample lasts >= %s);\n",
			c->reps, bench_ns_str(c->sample_ns, a, sizeof(a)));
	else
		fprintf(f, "samples:   %d per cell, one iteration each;\n", c->reps);
	fprintf(f, "           median and p10..p90 of the samples, wall clock (a clock read costs %s)\n",
		bench_ns_str(mc->timer_ns, b, sizeof(b)));
	fprintf(f, "memory:    %s available; regions of one size live at once when they fit in %.0f%% of it\n",
		bench_size_str((size_t)mc->mem_avail, a, sizeof(a)), c->mem_fraction * 100);
	for (int s = 0; s < c->nsizes; s++)
		if (r->size_note[s][0])
			fprintf(f, "           %s\n", r->size_note[s]);
	for (int g = 0; g < 2; g++)
		if (r->group_error[g][0])
			fprintf(f, "error:     %s backend: %s\n", g == BG_HW ? "hw" : "soft", r->group_error[g]);
	fprintf(f, "took:      %.1f s\n", r->seconds);
}

/* The region a method measured: pages, mappings, huge pages, checks. */
static void describe(const struct bench_results *r, int m, int s, char *buf, size_t len)
{
	const struct bench_setup *st = bench_setup(r, m, s);
	char a[32], b[32], c[32];
	int known;
	size_t n = 0;

	buf[0] = 0;
	if (st->status != BS_OK)
		return;
#define ADD(...) (void)(n < len ? (n += (size_t)snprintf(buf + n, len - n, __VA_ARGS__)) : 0)
	if (st->mappings > 1)
		ADD("%ld mappings of %s, ", st->mappings, bench_size_str(st->chunk, a, sizeof(a)));
	if (st->vma_kb >= 0) {
		size_t vma = (size_t)st->vma_kb * 1024;
		ADD("VMA %s", bench_size_str(vma, a, sizeof(a)));
		if (m == BM_SODIUM)
			ADD(" (with the canary page)");
		else if (vma > st->chunk)
			ADD(" (merged with a neighbour)");
		ADD("%s, ", st->named ? " named" : "");
	}
	if (st->huge_kb >= 0)
		ADD("AnonHugePages %s", bench_size_str((size_t)st->huge_kb * 1024, b, sizeof(b)));
	if (bench_methods[m].thp && st->huge_kb_after >= 0)
		ADD(" (%s after)", bench_size_str((size_t)st->huge_kb_after * 1024, c, sizeof(c)));
	if (bench_methods[m].thp && st->huge_kb >= 0 && (size_t)st->huge_kb * 1024 < r->cfg.sizes[s])
		ADD(" -- NOT all huge: THP is [%s] here, or the kernel found no free huge pages",
		    r->machine.thp_enabled);
	if (st->locked_kb >= 0)
		ADD(", mlocked %s", bench_size_str((size_t)st->locked_kb * 1024, c, sizeof(c)));
	ADD("; closed: %s", si_code_name(st->fault_code, &known));
#undef ADD
}

#define LW 33 /* method label column */

static void print_main(FILE *f, const struct bench_results *r, int t)
{
	const struct bench_config *c = &r->cfg;
	char sz[32], a[32], d[48], e[32], g[32], h[40], notes[300], tl[40];

	fprintf(f, "\nClose + re-open a populated region, %s.  x switch: median over the median of\n"
		   "the domain switch (%s).  Touch after: the first write to every page\n"
		   "after re-opening; no change: the same writes with nothing closed before; refill: the\n"
		   "difference (the TLB refill a protection change costs).\n",
		threads_label(c->threads[t], tl, sizeof(tl)), bench_methods[r->ref_method].label);
	for (int s = 0; s < c->nsizes; s++) {
		bench_size_str(c->sizes[s], sz, sizeof(sz));
		fprintf(f, "\n%-8s %-*s %9s %17s %8s %11s %10s %10s\n", sz, LW, "method", "median", "p10..p90",
			"x switch", "touch after", "no change", "refill");
		for (int m = 0; m < BM_COUNT; m++) {
			const struct bench_cell *cl = bench_cell(r, m, s, t);
			if (cl->status != BS_OK) {
				fprintf(f, "         %-*s %s\n", LW, bench_methods[m].label, why(r, m, s));
				continue;
			}
			char ratio[16];
			if (cl->ratio > 0)
				snprintf(ratio, sizeof(ratio), cl->ratio < 0.01 ? "%.4f" : cl->ratio < 10 ? "%.2f" : "%.0f", cl->ratio);
			else
				snprintf(ratio, sizeof(ratio), "-");
			double refill = cl->s_touch.median - cl->s_base.median;
			snprintf(h, sizeof(h), "%s%s", refill < 0 ? "-" : "+", small_ns_str(fabs(refill), g, sizeof(g)));
			fprintf(f, "         %-*s %9s %17s %8s %11s %10s %10s\n", LW, bench_methods[m].label,
				bench_ns_str(cl->s_sw.median, a, sizeof(a)), range_str(cl->s_sw.p10, cl->s_sw.p90, d, sizeof(d)),
				ratio, small_ns_str(cl->s_touch.median, e, sizeof(e)),
				small_ns_str(cl->s_base.median, g, sizeof(g)), h);
		}
		int any = 0;
		for (int m = 0; m < BM_COUNT; m++) {
			describe(r, m, s, notes, sizeof(notes));
			if (!notes[0])
				continue;
			if (!any++)
				fprintf(f, "         regions:\n");
			fprintf(f, "           %-*s %s\n", LW, bench_methods[m].label, notes);
		}
	}
}

/* Methods by size, at thread count t: the median close + re-open and its
 * ratio to the switch (touch 0), or the first touch of every page after
 * re-opening and what it costs over the same touch with nothing closed. */
static void print_summary(FILE *f, const struct bench_results *r, int t, int touch)
{
	const struct bench_config *c = &r->cfg;
	char a[32], b[32], tl[40], cell[80];

	if (touch)
		fprintf(f, "\nSummary: the first write to every page after re-opening, median (+ what it\n"
			   "costs over the same writes with nothing closed before: the TLB refill)\n\n%-*s", LW, "method");
	else
		fprintf(f, "\nSummary, %s: close + re-open, median (x the domain switch)\n\n%-*s",
			threads_label(c->threads[t], tl, sizeof(tl)), LW, "method");
	for (int s = 0; s < c->nsizes; s++)
		fprintf(f, " %18s", bench_size_str(c->sizes[s], a, sizeof(a)));
	fprintf(f, "\n");
	for (int m = 0; m < BM_COUNT; m++) {
		int any = 0;
		for (int s = 0; s < c->nsizes; s++)
			any |= bench_cell(r, m, s, t)->status == BS_OK;
		if (!any) {
			fprintf(f, "%-*s %s\n", LW, bench_methods[m].label, why(r, m, 0));
			continue;
		}
		fprintf(f, "%-*s", LW, bench_methods[m].label);
		for (int s = 0; s < c->nsizes; s++) {
			const struct bench_cell *cl = bench_cell(r, m, s, t);
			if (cl->status != BS_OK) {
				snprintf(cell, sizeof(cell), "%s", bench_setup(r, m, s)->status == BS_NA ? "n/a" : status_str(cl->status));
			} else if (touch) {
				double refill = cl->s_touch.median - cl->s_base.median;
				snprintf(cell, sizeof(cell), "%s %s%s", small_ns_str(cl->s_touch.median, a, sizeof(a)),
					 refill < 0 ? "-" : "+", small_ns_str(fabs(refill), b, sizeof(b)));
			} else if (cl->ratio > 0) {
				snprintf(cell, sizeof(cell), cl->ratio < 0.01 ? "%s x%.4f" : cl->ratio < 10 ? "%s x%.2f" : "%s x%.0f",
					 bench_ns_str(cl->s_sw.median, a, sizeof(a)), cl->ratio);
			} else {
				snprintf(cell, sizeof(cell), "%s", bench_ns_str(cl->s_sw.median, a, sizeof(a)));
			}
			fprintf(f, " %18s", cell);
		}
		fprintf(f, "\n");
	}
}

static void print_threads(FILE *f, const struct bench_results *r)
{
	const struct bench_config *c = &r->cfg;
	char sz[32], a[32], tl[40];

	if (c->nthreads < 2)
		return;
	fprintf(f, "\nWith other busy threads in the process (TLB shootdowns reach the CPUs they run on):\n"
		   "median close + re-open, and x the domain switch with as many threads.\n");
	fprintf(f, "0 other threads is mprotect without a remote shootdown, the closest thing to the\n"
		   "\"no remote TLB shootdown\" mprotect flag proposed in 2015 (no such flag exists).\n");
	for (int s = 0; s < c->nsizes; s++) {
		bench_size_str(c->sizes[s], sz, sizeof(sz));
		fprintf(f, "\n%-8s %-*s", sz, LW, "method");
		for (int t = 0; t < c->nthreads; t++)
			fprintf(f, " %18s", threads_label(c->threads[t], tl, sizeof(tl)));
		fprintf(f, "\n");
		for (int m = 0; m < BM_COUNT; m++) {
			const struct bench_cell *c0 = bench_cell(r, m, s, 0);
			if (c0->status != BS_OK && c0->status != BS_FAILED) {
				fprintf(f, "         %-*s %s\n", LW, bench_methods[m].label, why(r, m, s));
				continue;
			}
			fprintf(f, "         %-*s", LW, bench_methods[m].label);
			for (int t = 0; t < c->nthreads; t++) {
				const struct bench_cell *cl = bench_cell(r, m, s, t);
				char cell[40];
				if (cl->status != BS_OK)
					snprintf(cell, sizeof(cell), "%s", status_str(cl->status));
				else if (cl->ratio > 0)
					snprintf(cell, sizeof(cell), cl->ratio < 0.01 ? "%s x%.4f" : cl->ratio < 10 ? "%s x%.2f" : "%s x%.0f",
						 bench_ns_str(cl->s_sw.median, a, sizeof(a)), cl->ratio);
				else
					snprintf(cell, sizeof(cell), "%s", bench_ns_str(cl->s_sw.median, a, sizeof(a)));
				fprintf(f, " %18s", cell);
			}
			fprintf(f, "\n");
		}
	}
}

/* mpkit / mprotect on the same region (the median of each round's ratio):
 * at the first thread count, and the worst over all of them. */
static int same_ratio(const struct bench_results *r, int m, int s, double *first, double *worst)
{
	*first = *worst = 0;
	for (int t = 0; t < r->cfg.nthreads; t++) {
		const struct bench_cell *x = bench_cell(r, m, s, t);
		if (x->status != BS_OK || x->s_pair.median <= 0)
			continue;
		double q = x->s_pair.median;
		if (t == 0)
			*first = q;
		*worst = q > *worst ? q : *worst;
	}
	return *first > 0;
}

/* Where mpk_alloc's mapping costs more to mprotect than one of its own:
 * the sizes, and the likely reason once (a fixed cost: see the smallest). */
static void print_alloc_mapping(FILE *f, const struct bench_results *r)
{
	const struct bench_config *c = &r->cfg;
	char sz[32], d[32], e[32];
	int said = 0, merged_s = -1;
	double fixed = 0;

	for (int s = 0; s < c->nsizes; s++) {
		const struct bench_cell *x = bench_cell(r, BM_SOFT_SET, s, 0), *y = bench_cell(r, BM_MPROTECT, s, 0);
		const struct bench_setup *st = bench_setup(r, BM_SOFT_SET, s);
		if (x->status != BS_OK || y->status != BS_OK || y->s_sw.median <= 0 || x->s_raw.median <= 0)
			continue;
		/* the better of the two on that mapping: noise only ever adds */
		double best = x->s_raw.median < x->s_sw.median ? x->s_raw.median : x->s_sw.median;
		double q = best / y->s_sw.median;
		if (q <= 1.10)
			continue;
		if (!said++)
			fprintf(f, "an mprotect pair on mpk_alloc's mapping against one on a mapping of its own:\n ");
		fprintf(f, " %s %.2fx (+%s)", bench_size_str(c->sizes[s], sz, sizeof(sz)), q,
			bench_ns_str(best - y->s_sw.median, e, sizeof(e)));
		if (merged_s < 0 && st->vma_kb >= 0 && (size_t)st->vma_kb * 1024 > c->sizes[s]) {
			merged_s = s;
			fixed = best - y->s_sw.median;
		}
	}
	if (said)
		fprintf(f, "\n");
	if (merged_s >= 0) {
		const struct bench_setup *st = bench_setup(r, BM_SOFT_SET, merged_s);
		fprintf(f, "  mpk_alloc's mapping shares a VMA with a neighbour (%s at %s): every close splits\n"
			   "  it and every re-open merges it back, a fixed cost of about %s a pair%s\n",
			bench_size_str((size_t)st->vma_kb * 1024, d, sizeof(d)),
			bench_size_str(c->sizes[merged_s], sz, sizeof(sz)), bench_ns_str(fixed, e, sizeof(e)),
			st->named ? "" : ";\n  no [anon:mpk:NAME] keeps them apart: this kernel cannot name anonymous mappings\n  (CONFIG_ANON_VMA_NAME)");
	}
}

static void print_nochange(FILE *f, const struct bench_results *r)
{
	char d[32], e[32];

	for (int g = 0; g < 2; g++) {
		const struct bench_nochange *nc = &r->nochange[g];
		const char *name = g == BG_HW ? "hw" : "soft";
		if (nc->status != BS_OK) {
			fprintf(f, "rights that do not change, %s: %s\n", name, nc->why[0] ? nc->why : status_str(nc->status));
			continue;
		}
		fprintf(f, "rights that do not change, %s: mpk_set(RW) on RW %s, enter(RW) + leave on RW %s;\n"
			   "  %llu mprotect calls in %llu calls%s\n",
			name, bench_ns_str(nc->set_same.median, d, sizeof(d)), bench_ns_str(nc->enter_same.median, e, sizeof(e)),
			nc->mprotects, nc->calls, nc->mprotects ? "  (should be 0)" : "");
	}
}

/* Requirement: the soft switch costs at most 1.1 x the raw mprotect pair
 * on the same region, and nothing when rights do not change. */
static void print_soft(FILE *f, const struct bench_results *r)
{
	const struct bench_config *c = &r->cfg;
	char sz[32], a[32], b[32], tl[40];
	int over = 0, n = 0, verdict = !c->smoke && !r->machine.emulated;

	fprintf(f, "\nmpkit against an mprotect pair on the very same mapping, the two sampled in turns:\n"
		   "the soft backend should cost at most 1.10x (and nothing when rights do not change).\n"
		   "ratio: the median of the rounds' mpkit/mprotect ratios at %s (p10..p90\n"
		   "of them); worst: the highest median over the thread counts.\n",
		threads_label(c->threads[0], tl, sizeof(tl)));
	fprintf(f, "\n%-8s %-*s %9s %9s %7s %12s %7s\n", "size", LW, "mpkit row", "mpkit", "mprotect", "ratio",
		"p10..p90", "worst");
	for (int s = 0; s < c->nsizes; s++)
		for (int m = 0; m < BM_COUNT; m++) {
			double q, worst;
			if (!bench_methods[m].backend_row || !same_ratio(r, m, s, &q, &worst))
				continue;
			const struct bench_cell *x = bench_cell(r, m, s, 0);
			int soft = bench_methods[m].group == BG_SOFT;
			n += soft;
			over += soft && q > 1.10;
			char pr[32];
			snprintf(pr, sizeof(pr), "%.2f..%.2f", x->s_pair.p10, x->s_pair.p90);
			fprintf(f, "%-8s %-*s %9s %9s %6.3fx %12s %6.3fx%s\n", bench_size_str(c->sizes[s], sz, sizeof(sz)), LW,
				bench_methods[m].label, bench_ns_str(x->s_sw.median, a, sizeof(a)),
				bench_ns_str(x->s_raw.median, b, sizeof(b)), q, pr, worst,
				verdict && soft && q > 1.10 ? "  over 1.10" : "");
		}
	if (!n)
		fprintf(f, "(no soft measurements)\n");
	else if (!verdict)
		fprintf(f, "soft: no verdict from a smoke test\n");
	else
		fprintf(f, "soft: %d of %d within 1.10x\n", n - over, n);
	if (verdict)
		print_alloc_mapping(f, r);
	print_nochange(f, r);
}

void bench_print(FILE *f, const struct bench_results *r)
{
	print_machine(f, r);
	print_summary(f, r, 0, 0);
	if (r->cfg.nthreads > 1)
		print_summary(f, r, r->cfg.nthreads - 1, 0);
	print_summary(f, r, 0, 1);
	print_main(f, r, 0);
	print_threads(f, r);
	print_soft(f, r);
	if (r->cfg.smoke || r->machine.emulated)
		fprintf(f, "\n(smoke test: timings are not measurements)\n");
}

/* ---------------------------------------------------------------- CSV */

int bench_write_csv(FILE *f, const struct bench_results *r)
{
	fprintf(f, "size_bytes,method,label,backend_row,other_threads,status,samples,iters_per_switch_sample,"
		   "iters_per_touch_sample,median_ns,p10_ns,p90_ns,ratio_to_switch,touch_after_median_ns,"
		   "touch_after_p10_ns,touch_after_p90_ns,touch_nochange_median_ns,refill_ns,same_region_mprotect_median_ns,"
		   "same_region_ratio,anon_huge_kb,mappings,closed_si_code,note\n");
	for (int s = 0; s < r->cfg.nsizes; s++)
		for (int m = 0; m < BM_COUNT; m++)
			for (int t = 0; t < r->cfg.nthreads; t++) {
				const struct bench_cell *c = bench_cell(r, m, s, t);
				const struct bench_setup *st = bench_setup(r, m, s);
				fprintf(f, "%zu,%s,\"%s\",%d,%d,%s,", r->cfg.sizes[s], bench_methods[m].id,
					bench_methods[m].label, bench_methods[m].backend_row, r->cfg.threads[t],
					status_str(c->status));
				if (c->status != BS_OK) {
					fprintf(f, ",,,,,,,,,,,,,,,,,\"%s\"\n", why(r, m, s));
					continue;
				}
				fprintf(f, "%d,%ld,%ld,%.1f,%.1f,%.1f,%.6g,%.1f,%.1f,%.1f,%.1f,%.1f,", c->n, c->iters_switch,
					c->iters_touch, c->s_sw.median, c->s_sw.p10, c->s_sw.p90, c->ratio, c->s_touch.median,
					c->s_touch.p10, c->s_touch.p90, c->s_base.median, c->s_touch.median - c->s_base.median);
				if (bench_methods[m].backend_row)
					fprintf(f, "%.1f,%.4f,", c->s_raw.median, c->s_pair.median);
				else
					fprintf(f, ",,");
				fprintf(f, "%ld,%ld,%d,\"\"\n", st->huge_kb, st->mappings, st->fault_code);
			}
	return fflush(f) || ferror(f) ? -1 : 0;
}

/* ---------------------------------------------------------------- JSON */

static void jstat(FILE *f, const struct bench_stat *s)
{
	fprintf(f, "{\"median\": ");
	mpk_json_num(f, s->median);
	fprintf(f, ", \"p10\": ");
	mpk_json_num(f, s->p10);
	fprintf(f, ", \"p90\": ");
	mpk_json_num(f, s->p90);
	fprintf(f, "}");
}

static void json_machine(FILE *f, const struct bench_machine *mc)
{
	fprintf(f, "  \"machine\": {\"cpu\": ");
	mpk_json_str(f, mc->cpu);
	fprintf(f, ", \"cpus_online\": %d, \"cpus_allowed\": %d, \"pinned\": %s, \"hypervisor\": %s, \"emulated\": %s, \"kernel\": ",
		mc->ncpus, mc->cpus_allowed, mc->pinned ? "true" : "false", mc->hypervisor ? "true" : "false",
		mc->emulated ? "true" : "false");
	mpk_json_str(f, mc->kernel);
	fprintf(f, ", \"mem_total_bytes\": %.0f, \"mem_available_bytes\": %.0f, \"thp_enabled\": ", mc->mem_total,
		mc->mem_avail);
	mpk_json_str(f, mc->thp_enabled);
	fprintf(f, ", \"thp_defrag\": ");
	mpk_json_str(f, mc->thp_defrag);
	fprintf(f, ", \"damon\": ");
	mpk_json_str(f, mc->damon[0] ? mc->damon : NULL);
	fprintf(f, ",\n    \"cpu_pku\": %s, \"cpu_ospke\": %s, \"kernel_pkeys\": %s, \"hw_available\": %s, \"auto_backend\": \"%s\", \"libsodium\": ",
		mc->cpu_pku ? "true" : "false", mc->cpu_ospke ? "true" : "false", mc->kernel_pkeys ? "true" : "false",
		mc->hw_available ? "true" : "false", mc->auto_backend == MPK_BACKEND_HW ? "hw" : "soft");
	mpk_json_str(f, mc->sodium_version[0] ? mc->sodium_version : NULL);
	fprintf(f, ", \"clock_read_ns\": %.1f},\n", mc->timer_ns);
}

static void json_fastpath(FILE *f, const struct bench_fastpath *fp)
{
	fprintf(f, "  \"hw_fast_path\": {\"ok\": %s, \"file\": ", fp->ok ? "true" : "false");
	mpk_json_str(f, fp->file);
	if (!fp->ok) {
		fprintf(f, ", \"why\": ");
		mpk_json_str(f, fp->why);
	}
	for (int i = 0; i < 3; i++) {
		fprintf(f, ", \"%s\": ", fp->fn[i].name);
		if (!fp->fn[i].found) {
			fprintf(f, "null");
			continue;
		}
		fprintf(f, "{\"instructions\": %d, \"rdpkru\": %d, \"wrpkru\": %d, \"branches\": %d, \"calls\": %d, \"syscalls\": %d, \"locked\": %d}",
			fp->fn[i].insns, fp->fn[i].rdpkru, fp->fn[i].wrpkru, fp->fn[i].branches, fp->fn[i].calls,
			fp->fn[i].syscalls, fp->fn[i].locked);
	}
	fprintf(f, "},\n");
}

static void json_nochange(FILE *f, const struct bench_results *r)
{
	fprintf(f, "  \"unchanged_rights\": {");
	for (int g = 0; g < 2; g++) {
		const struct bench_nochange *nc = &r->nochange[g];
		fprintf(f, "%s\"%s\": {\"status\": \"%s\"", g ? ", " : "", g == BG_HW ? "hw" : "soft", status_str(nc->status));
		if (nc->status == BS_OK) {
			fprintf(f, ", \"set_same_ns\": ");
			jstat(f, &nc->set_same);
			fprintf(f, ", \"enter_leave_same_ns\": ");
			jstat(f, &nc->enter_same);
			fprintf(f, ", \"calls\": %llu, \"mprotect_calls\": %llu", nc->calls, nc->mprotects);
		} else if (nc->why[0]) {
			fprintf(f, ", \"why\": ");
			mpk_json_str(f, nc->why);
		}
		fprintf(f, "}");
	}
	fprintf(f, "},\n");
}

/* One cell of "results", without the separator before it. */
static void json_cell(FILE *f, const struct bench_results *r, int m, int s, int t)
{
	const struct bench_cell *c = bench_cell(r, m, s, t);
	const struct bench_setup *st = bench_setup(r, m, s);

	fprintf(f, "    {\"size\": %zu, \"method\": \"%s\", \"label\": ", r->cfg.sizes[s], bench_methods[m].id);
	mpk_json_str(f, bench_methods[m].label);
	fprintf(f, ", \"other_threads\": %d, \"status\": \"%s\"", r->cfg.threads[t], status_str(c->status));
	if (c->status != BS_OK) {
		fprintf(f, ", \"why\": ");
		mpk_json_str(f, why(r, m, s));
		fprintf(f, "}");
		return;
	}
	fprintf(f, ", \"samples\": %d, \"iterations_per_sample\": %ld, \"close_reopen_ns\": ", c->n,
		c->iters_switch);
	jstat(f, &c->s_sw);
	fprintf(f, ", \"ratio_to_switch\": ");
	mpk_json_num(f, c->ratio);
	fprintf(f, ", \"touch_after_ns\": ");
	jstat(f, &c->s_touch);
	fprintf(f, ", \"touch_nochange_ns\": ");
	jstat(f, &c->s_base);
	if (bench_methods[m].backend_row) {
		fprintf(f, ", \"same_region_mprotect_ns\": ");
		jstat(f, &c->s_raw);
		fprintf(f, ", \"same_region_ratio\": ");
		jstat(f, &c->s_pair);
	}
	fprintf(f, ", \"anon_huge_kb\": %ld, \"anon_huge_kb_after\": %ld, \"mappings\": %ld, \"closed_si_code\": %d, \"verified\": %s}",
		st->huge_kb, st->huge_kb_after, st->mappings, st->fault_code, st->verified ? "true" : "false");
}

int bench_write_json(FILE *f, const struct bench_results *r)
{
	fprintf(f, "{\n  \"mpkit_version\": ");
	mpk_json_str(f, r->machine.mpkit_version);
	fprintf(f, ",\n  \"smoke\": %s,\n  \"seconds\": %.1f,\n", r->cfg.smoke ? "true" : "false", r->seconds);
	json_machine(f, &r->machine);
	fprintf(f, "  \"config\": {\"sizes\": [");
	for (int s = 0; s < r->cfg.nsizes; s++)
		fprintf(f, "%s%zu", s ? ", " : "", r->cfg.sizes[s]);
	fprintf(f, "], \"other_threads\": [");
	for (int t = 0; t < r->cfg.nthreads; t++)
		fprintf(f, "%s%d", t ? ", " : "", r->cfg.threads[t]);
	fprintf(f, "], \"samples\": %d, \"min_sample_ns\": %.0f, \"reference\": \"%s\"},\n", r->cfg.reps,
		r->cfg.sample_ns, bench_methods[r->ref_method].id);
	json_fastpath(f, &r->fastpath);
	json_nochange(f, r);
	fprintf(f, "  \"results\": [\n");
	for (int s = 0, first = 1; s < r->cfg.nsizes; s++)
		for (int m = 0; m < BM_COUNT; m++)
			for (int t = 0; t < r->cfg.nthreads; t++, first = 0) {
				fprintf(f, "%s", first ? "" : ",\n");
				json_cell(f, r, m, s, t);
			}
	fprintf(f, "\n  ]\n}\n");
	return fflush(f) || ferror(f) ? -1 : 0;
}
