/* SPDX-License-Identifier: MIT */
/*
 * The plot: cost of close + re-open against region size, log-log, one line
 * per method (solid: the first thread count, dashed: the last), drawn by
 * gnuplot (Debian: gnuplot-nox), a program we run, never a library we
 * link.  Without gnuplot --plot fails before the run and says how to get
 * it; the table, CSV and JSON need nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
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

#define W 1000
#define H 600
#define PX0 90.0
#define PX1 620.0
#define PY0 90.0
#define PY1 520.0

struct axes {
	double x0, x1, y0, y1; /* log2 size, log10 ns */
};

/* The axes: half a binary order of magnitude around the
 * sizes, whole decades around the medians drawn. */
static struct axes plot_axes(const struct bench_results *r)
{
	const struct bench_config *cfg = &r->cfg;
	int last = cfg->nthreads - 1;
	double lo = INFINITY, hi = 0;
	size_t smin = (size_t)-1, smax = 0;

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
	return a;
}

static const char plot_title[] = "mpkit bench: close + re-open a populated region (median)";

/* The two lines under the title: the machine and the backend, then what
 * the hw rows are (or that this is a smoke run). */
static void subtitles(const struct bench_results *r, char *l1, size_t n1, char *l2, size_t n2)
{
	const struct bench_machine *mc = &r->machine;
	int n;

	snprintf(l1, n1, "%s, %d CPUs, %s; backend %s", mc->cpu, mc->ncpus, mc->kernel,
		 mc->hw_available ? "hw (protection keys)" : "soft (mprotect emulation)");
	n = snprintf(l2, n2, "%s", mc->hw_available ? "hw rows measured with protection keys"
						   : "hw keys: not available on this CPU");
	if (r->fastpath.ok && r->fastpath.fn[0].found && n >= 0 && (size_t)n < n2)
		n += snprintf(l2 + n, n2 - n, "; hw mpk_set is %d instructions (objdump), independent of size",
			      r->fastpath.fn[0].insns);
	if ((r->cfg.smoke || mc->emulated) && n >= 0 && (size_t)n < n2)
		snprintf(l2 + n, n2 - n, "; SMOKE TEST: timings mean nothing");
}

static int has_points(const struct bench_results *r, int m, int t)
{
	for (int s = 0; s < r->cfg.nsizes; s++) {
		const struct bench_cell *c = bench_cell(r, m, s, t);
		if (c->status == BS_OK && c->s_sw.median > 0)
			return 1;
	}
	return 0;
}

/* The data, one block per method and thread count ("size_bytes median_ns"):
 * block[m][d] the index of method m's at the first (d 0) and the last
 * (d 1) thread count, -1 for none.  0, or -1 with errno. */
static int write_data(const char *dat, const struct bench_results *r, int block[BM_COUNT][2])
{
	const struct bench_config *cfg = &r->cfg;
	int last = cfg->nthreads - 1, idx = 0;
	FILE *f = fopen(dat, "w");

	if (!f)
		return -1;
	for (int m = 0; m < BM_COUNT; m++)
		for (int d = 0; d < 2; d++) {
			int t = d ? last : 0;
			block[m][d] = -1;
			if ((d && last <= 0) || !has_points(r, m, t))
				continue;
			fprintf(f, "%s# %s, %d other threads\n", idx ? "\n\n" : "", bench_methods[m].id, cfg->threads[t]);
			for (int s = 0; s < cfg->nsizes; s++) {
				const struct bench_cell *c = bench_cell(r, m, s, t);
				if (c->status == BS_OK && c->s_sw.median > 0)
					fprintf(f, "%zu %.6g\n", cfg->sizes[s], c->s_sw.median);
			}
			block[m][d] = idx++;
		}
	return fclose(f);
}

/* The terminal, the layout, the title and the notes around the plot. */
static void write_labels(FILE *f, const struct bench_results *r)
{
	char l1[512], l2[512];

	subtitles(r, l1, sizeof(l1), l2, sizeof(l2));
	/* enhanced for the bold title only: texts from the machine and the
	 * methods are marked noenhanced, so "@" and "_" in them stay literal */
	fprintf(f, "# mpkit bench plot\n"
		   "set terminal svg size %d,%d fixed enhanced font 'DejaVu Sans,12' background '#ffffff'\n"
		   "set encoding utf8\n"
		   "set output\n", W, H);
	/* the built-in layout: plot box left, key and notes right */
	fprintf(f, "set lmargin at screen %.4f\nset rmargin at screen %.4f\n"
		   "set tmargin at screen %.4f\nset bmargin at screen %.4f\n",
		PX0 / W, PX1 / W, 1 - PY0 / H, 1 - PY1 / H);
	/* a constant without markup characters */
	fprintf(f, "set label 1 '{/:Bold %s}' enhanced at screen %.4f, screen %.4f font ',17'\n", plot_title,
		(PX0 - 40) / W, 1 - 28.0 / H);
	fprintf(f, "set label 2 ");
	bench_gnuplot_quote(f, l1);
	fprintf(f, " at screen %.4f, screen %.4f textcolor rgb '#444444' noenhanced\n", (PX0 - 40) / W, 1 - 50.0 / H);
	fprintf(f, "set label 3 ");
	bench_gnuplot_quote(f, l2);
	fprintf(f, " at screen %.4f, screen %.4f textcolor rgb '#444444' noenhanced\n", (PX0 - 40) / W, 1 - 68.0 / H);
	fprintf(f, "set label 4 'median of %d samples per point' at screen %.4f, screen %.4f textcolor rgb '#444444'\n",
		r->cfg.reps, (PX1 + 20) / W, 1 - (PY1 - 16) / H);
	fprintf(f, "set label 5 ");
	snprintf(l1, sizeof(l1), "mpkit %s, run took %.0f s", r->machine.mpkit_version, r->seconds);
	bench_gnuplot_quote(f, l1);
	fprintf(f, " at screen %.4f, screen %.4f textcolor rgb '#444444' noenhanced\n", (PX1 + 20) / W, 1 - PY1 / H);
}

/* Log-log axes, their tics and grid, the key's place. */
static void write_axes(FILE *f, const struct bench_results *r)
{
	const struct bench_config *cfg = &r->cfg;
	struct axes a = plot_axes(r);
	char buf[64];
	int first = 1;

	/* the y range a hair wider than its decades: gnuplot drops a tic
	 * label that lies exactly on the bottom end of a log axis */
	fprintf(f, "set logscale xy\nset border lc rgb '#333333'\n"
		   "set xrange [%.6g:%.6g]\nset yrange [%.10g:%.10g]\n",
		exp2(a.x0), exp2(a.x1), pow(10, a.y0) * (1 - 1e-7), pow(10, a.y1) * (1 + 1e-7));
	fprintf(f, "set xtics nomirror out (");
	for (int s = 0; s < cfg->nsizes; s++)
		fprintf(f, "%s'%s' %zu", s ? ", " : "", bench_size_str(cfg->sizes[s], buf, sizeof(buf)), cfg->sizes[s]);
	/* decades labelled in ns/us/ms/s like the built-in axis; the unlabelled
	 * series underneath gives gnuplot its minor tics */
	fprintf(f, ")\nset ytics nomirror out 10 format ''\nset mytics 10\nset ytics add (");
	for (double e = a.y0; e <= a.y1 + 1e-9; e++, first = 0)
		fprintf(f, "%s'%s' %.6g", first ? "" : ", ", decade_str(e, buf, sizeof(buf)), pow(10, e));
	fprintf(f, ")\nset grid xtics ytics mytics lt 1 lc rgb '#dddddd' lw 1, lt 1 lc rgb '#f2f2f2' lw 1\n"
		   "set xlabel 'region size (log scale)'\n"
		   "set ylabel 'close + re-open, median (log scale)'\n"
		   "set key at screen %.4f, screen %.4f left top Left reverse samplen 2 spacing 1.35 noautotitle\n",
		(PX1 + 12) / W, 1 - PY0 / H + 0.01);
}

/* The lines: dashed (most threads) first, solid on top; a key entry per
 * method drawn, then the two line styles. */
static void write_lines(FILE *f, const char *dat, const struct bench_results *r, int block[BM_COUNT][2])
{
	const struct bench_config *cfg = &r->cfg;
	int last = cfg->nthreads - 1, first = 1;
	char l1[64];

	fprintf(f, "plot ");
	for (int d = 1; d >= 0; d--)
		for (int m = 0; m < BM_COUNT; m++) {
			if (block[m][d] < 0)
				continue;
			fprintf(f, "%s", first ? "" : ", \\\n     ");
			first = 0;
			bench_gnuplot_quote(f, dat);
			fprintf(f, " index %d using 1:2 with linespoints lc rgb '%s' ", block[m][d], color(m));
			if (d)
				fprintf(f, "lw 1.5 dt (6,4) pt 6 ps 0.6");
			else
				fprintf(f, "lw 2.2 dt solid pt 7 ps 0.6");
			if (!d || block[m][0] < 0) {
				fprintf(f, " title ");
				bench_gnuplot_quote(f, bench_methods[m].label);
				fprintf(f, " noenhanced");
			}
		}
	snprintf(l1, sizeof(l1), "%d other thread%s", cfg->threads[0], cfg->threads[0] == 1 ? "" : "s");
	fprintf(f, "%sNaN with lines lc rgb '#333333' lw 2.2 dt solid title ", first ? "" : ", \\\n     ");
	bench_gnuplot_quote(f, l1);
	if (last > 0)
		fprintf(f, ", \\\n     NaN with lines lc rgb '#333333' lw 1.5 dt (6,4) title '%d other busy thread%s (TLB shootdowns)'",
			cfg->threads[last], cfg->threads[last] == 1 ? "" : "s");
	fprintf(f, "\n");
}

/* The data and the script that draws it, SVG on stdout.  0, or -1 with
 * errno. */
static int write_gnuplot_input(const char *dat, const char *gp, const void *arg)
{
	const struct bench_results *r = arg;
	int block[BM_COUNT][2];
	FILE *f;

	if (write_data(dat, r, block) || !(f = fopen(gp, "w")))
		return -1;
	write_labels(f, r);
	write_axes(f, r);
	write_lines(f, dat, r, block);
	return fclose(f);
}


int bench_plot(const char *path, const struct bench_results *r, const struct bench_gnuplot *g, char *msg,
	       size_t len)
{
	char why[2048];

	switch (bench_gnuplot_draw(path, g, write_gnuplot_input, r, why, sizeof(why))) {
	case 0:
		snprintf(msg, len, "drawn with %s (%s)", g->version, g->exe);
		return 0;
	case -2:
		snprintf(msg, len, "writing %s: %s", path, strerror(errno));
		return -1;
	}
	snprintf(msg, len, "%s; not drawn", why);
	return -1;
}
