/* SPDX-License-Identifier: MIT */
/*
 * The plot: cost of close + re-open against region size, log-log, one line
 * per method (solid: the first thread count, dashed: the last).  Written
 * by hand as SVG rather than with gnuplot: it always works, in CI and in
 * the VM too, needs no package, and the picture does not change with the
 * gnuplot version.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mpkit.h"
#include "bench.h"

static const char *colors[BM_COUNT] = {
	[BM_HW_ENTER] = "#1b9e77",      [BM_HW_SET] = "#0a5c44",        [BM_SOFT_ENTER] = "#e7298a",
	[BM_SOFT_SET] = "#d95f02",      [BM_SOFT_ISO] = "#fdae61",      [BM_SOFT_THP] = "#a6761d",
	[BM_MPROTECT] = "#7570b3",      [BM_MPROTECT_THP] = "#66a61e",  [BM_MPROTECT_MANY] = "#1f78b4",
	[BM_SODIUM] = "#666666",
};

/* 1 ns, 10 ns, 100 ns, 1 us ... for the decades of the y axis */
static const char *decade_str(double e, char *buf, size_t len)
{
	static const char *unit[] = { "ns", "us", "ms", "s" };
	int k = (int)lround(e);
	if (k < 0)
		k = 0;
	int u = k / 3 < 3 ? k / 3 : 3;
	snprintf(buf, len, "%.0f %s", pow(10, k - 3 * u), unit[u]);
	return buf;
}

static const char *color(int m)
{
	return colors[m] ? colors[m] : "#000000";
}

static void xml(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f);
		}
	}
}

#define W 1000
#define H 600
#define PX0 90.0
#define PX1 620.0
#define PY0 90.0
#define PY1 520.0

struct axes {
	double x0, x1, y0, y1; /* log2 size, log10 ns */
};

static double X(const struct axes *a, size_t size)
{
	return PX0 + (log2((double)size) - a->x0) / (a->x1 - a->x0) * (PX1 - PX0);
}

static double Y(const struct axes *a, double ns)
{
	return PY1 - (log10(ns) - a->y0) / (a->y1 - a->y0) * (PY1 - PY0);
}

static void series(FILE *f, const struct bench_results *r, const struct axes *a, int m, int t, int dashed)
{
	int n = 0;
	for (int s = 0; s < r->cfg.nsizes; s++) {
		const struct bench_cell *c = bench_cell(r, m, s, t);
		if (c->status != BS_OK || c->s_sw.median <= 0)
			continue;
		if (!n++)
			fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s points=\"", color(m),
				dashed ? "1.5" : "2.2", dashed ? " stroke-dasharray=\"6 4\" opacity=\"0.8\"" : "");
		fprintf(f, "%.1f,%.1f ", X(a, r->cfg.sizes[s]), Y(a, c->s_sw.median));
	}
	if (n)
		fprintf(f, "\"/>\n");
	for (int s = 0; s < r->cfg.nsizes; s++) {
		const struct bench_cell *c = bench_cell(r, m, s, t);
		if (c->status != BS_OK || c->s_sw.median <= 0)
			continue;
		if (dashed)
			fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"white\" stroke=\"%s\"/>\n",
				X(a, r->cfg.sizes[s]), Y(a, c->s_sw.median), color(m));
		else
			fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.2\" fill=\"%s\"/>\n", X(a, r->cfg.sizes[s]),
				Y(a, c->s_sw.median), color(m));
	}
}

int bench_write_svg(const char *path, const struct bench_results *r)
{
	const struct bench_config *cfg = &r->cfg;
	const struct bench_machine *mc = &r->machine;
	int last = cfg->nthreads - 1;
	double lo = INFINITY, hi = 0;
	size_t smin = (size_t)-1, smax = 0;
	char buf[64];

	for (int m = 0; m < BM_COUNT; m++)
		for (int s = 0; s < cfg->nsizes; s++)
			for (int t = 0; t < cfg->nthreads; t += last > 0 ? last : 1) {
				const struct bench_cell *c = bench_cell(r, m, s, t);
				if (c->status != BS_OK || c->s_sw.median <= 0)
					continue;
				lo = fmin(lo, c->s_sw.median);
				hi = fmax(hi, c->s_sw.median);
			}
	for (int s = 0; s < cfg->nsizes; s++) {
		smin = cfg->sizes[s] < smin ? cfg->sizes[s] : smin;
		smax = cfg->sizes[s] > smax ? cfg->sizes[s] : smax;
	}
	if (!(hi > 0)) {
		lo = 1;
		hi = 10;
	}
	struct axes a = { log2((double)smin) - 0.5, log2((double)smax) + 0.5, floor(log10(lo)), ceil(log10(hi)) };
	if (a.y1 <= a.y0)
		a.y1 = a.y0 + 1;

	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		   "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n"
		   "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, H, W, H);
	fprintf(f, "<text x=\"%d\" y=\"28\" font-size=\"17\" font-weight=\"bold\">mpkit bench: close + re-open a populated region (median)</text>\n",
		(int)PX0 - 40);
	fprintf(f, "<text x=\"%d\" y=\"50\" fill=\"#444\">", (int)PX0 - 40);
	xml(f, mc->cpu);
	fprintf(f, ", %d CPUs, ", mc->ncpus);
	xml(f, mc->kernel);
	fprintf(f, "; backend %s</text>\n", mc->hw_available ? "hw (protection keys)" : "soft (mprotect emulation)");
	fprintf(f, "<text x=\"%d\" y=\"68\" fill=\"#444\">", (int)PX0 - 40);
	if (mc->hw_available)
		fprintf(f, "hw rows measured with protection keys");
	else
		fprintf(f, "hw keys: not available on this CPU");
	if (r->fastpath.ok && r->fastpath.fn[0].found)
		fprintf(f, "; hw mpk_set is %d instructions (objdump), independent of size", r->fastpath.fn[0].insns);
	if (cfg->smoke || mc->emulated)
		fprintf(f, "; SMOKE TEST: timings mean nothing");
	fprintf(f, "</text>\n");

	/* grid and axes */
	for (double e = a.y0; e <= a.y1 + 1e-9; e++) {
		double y = Y(&a, pow(10, e));
		fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", PX0, y, PX1, y);
		for (int k = 2; k < 10 && e < a.y1; k++) {
			double ym = Y(&a, k * pow(10, e));
			fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#f2f2f2\"/>\n", PX0, ym, PX1, ym);
		}
		fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", PX0 - 6, y + 4,
			decade_str(e, buf, sizeof(buf)));
	}
	for (int s = 0; s < cfg->nsizes; s++) {
		double x = X(&a, cfg->sizes[s]);
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#ddd\"/>\n", x, PY0, x, PY1);
		fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>\n", x, PY1 + 18,
			bench_size_str(cfg->sizes[s], buf, sizeof(buf)));
	}
	fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"#333\"/>\n", PX0, PY0,
		PX1 - PX0, PY1 - PY0);
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">region size (log scale)</text>\n", (PX0 + PX1) / 2,
		PY1 + 40);
	fprintf(f, "<text transform=\"translate(22 %.0f) rotate(-90)\" text-anchor=\"middle\">close + re-open, median (log scale)</text>\n",
		(PY0 + PY1) / 2);

	/* lines: dashed (most threads) first, solid on top */
	if (last > 0)
		for (int m = 0; m < BM_COUNT; m++)
			series(f, r, &a, m, last, 1);
	for (int m = 0; m < BM_COUNT; m++)
		series(f, r, &a, m, 0, 0);

	/* legend */
	double ly = PY0 + 4;
	for (int m = 0; m < BM_COUNT; m++) {
		int any = 0;
		for (int s = 0; s < cfg->nsizes; s++)
			any |= bench_cell(r, m, s, 0)->status == BS_OK;
		fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2.2\"%s/>\n",
			PX1 + 20, ly, PX1 + 44, ly, color(m), any ? "" : " opacity=\"0.25\"");
		fprintf(f, "<text x=\"%.0f\" y=\"%.1f\"%s>", PX1 + 50, ly + 4, any ? "" : " fill=\"#999\"");
		xml(f, bench_methods[m].label);
		if (!any)
			fprintf(f, " (%s)", bench_setup(r, m, 0)->status == BS_NA ? "n/a" : "not measured");
		fprintf(f, "</text>\n");
		ly += 20;
	}
	ly += 10;
	fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#333\" stroke-width=\"2.2\"/>\n", PX1 + 20,
		ly, PX1 + 44, ly);
	fprintf(f, "<text x=\"%.0f\" y=\"%.1f\">%d other thread%s</text>\n", PX1 + 50, ly + 4, cfg->threads[0],
		cfg->threads[0] == 1 ? "" : "s");
	if (last > 0) {
		ly += 20;
		fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#333\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\n",
			PX1 + 20, ly, PX1 + 44, ly);
		fprintf(f, "<text x=\"%.0f\" y=\"%.1f\">%d other busy threads (TLB shootdowns)</text>\n", PX1 + 50, ly + 4,
			cfg->threads[last]);
	}
	ly += 30;
	fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" fill=\"#444\">median of %d samples per point</text>\n", PX1 + 20, ly,
		cfg->reps);
	fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" fill=\"#444\">mpkit %s, run took %.0f s</text>\n", PX1 + 20, ly + 16,
		mc->mpkit_version, r->seconds);
	fprintf(f, "</svg>\n");
	return fclose(f);
}
