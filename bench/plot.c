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
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* ---- gnuplot, when it is on PATH ---- */

extern char **environ;

/* An executable name on PATH, searched the way execvp() would (no PATH: the
 * system default), so that we can say plainly when it is absent. */
static int find_on_path(const char *name, char *out, size_t len)
{
	char def[256];
	const char *path = getenv("PATH");
	if (!path) {
		size_t n = confstr(_CS_PATH, def, sizeof(def));
		path = n > 0 && n <= sizeof(def) ? def : "/bin:/usr/bin";
	}
	for (const char *p = path;;) {
		const char *end = strchrnul(p, ':');
		int dl = (int)(end - p);
		struct stat st;
		/* an empty entry is the current directory */
		int n = snprintf(out, len, "%.*s/%s", dl ? dl : 1, dl ? p : ".", name);
		if (n > 0 && (size_t)n < len && !stat(out, &st) && S_ISREG(st.st_mode) && !access(out, X_OK))
			return 0;
		if (!*end)
			return -1;
		p = end + 1;
	}
}

/* Starts argv[0] (a path, no PATH search: we run what we found) with stdin
 * from /dev/null, so that it never waits for a terminal, and stdout on fd
 * out.  0 and *pid, or an errno value. */
static int spawn(char *const argv[], int out, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	int err = posix_spawn_file_actions_init(&fa);
	if (err)
		return err;
	err = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (!err && out != 1)
		err = posix_spawn_file_actions_adddup2(&fa, out, 1);
	if (!err)
		err = posix_spawn(pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	return err;
}

static int reap(pid_t pid)
{
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return status;
}

/* "exit status 1", "killed by signal 9" */
static const char *status_str(int status, char *buf, size_t len)
{
	if (status == -1)
		snprintf(buf, len, "lost: %s", strerror(errno));
	else if (WIFEXITED(status))
		snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d, %s", WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "wait status %#x", status);
	return buf;
}

int bench_gnuplot_find(struct bench_gnuplot *g)
{
	int fd[2], major = 0, minor = 0;
	pid_t pid;
	char out[128];
	size_t n = 0;

	memset(g, 0, sizeof(*g));
	if (find_on_path("gnuplot", g->exe, sizeof(g->exe))) {
		g->exe[0] = 0;
		snprintf(g->why, sizeof(g->why), "gnuplot not found on PATH");
		return -1;
	}
	g->found = 1;
	/* Its first line of --version names it in our message: "gnuplot 5.4
	 * patchlevel 4". */
	if (pipe2(fd, O_CLOEXEC)) {
		snprintf(g->why, sizeof(g->why), "cannot run %s: pipe: %s", g->exe, strerror(errno));
		return -1;
	}
	char *argv[] = { g->exe, "--version", NULL };
	int err = spawn(argv, fd[1], &pid);
	close(fd[1]);
	if (err) {
		close(fd[0]);
		snprintf(g->why, sizeof(g->why), "cannot run %s: %s", g->exe, strerror(err));
		return -1;
	}
	for (;;) { /* read it all, so that the child never blocks on a full pipe */
		char tmp[256];
		ssize_t k = read(fd[0], tmp, sizeof(tmp));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		size_t c = (size_t)k < sizeof(out) - 1 - n ? (size_t)k : sizeof(out) - 1 - n;
		memcpy(out + n, tmp, c);
		n += c;
	}
	close(fd[0]);
	out[n] = 0;
	out[strcspn(out, "\r\n")] = 0;
	int status = reap(pid);
	if (status != 0 || sscanf(out, "gnuplot %d.%d", &major, &minor) != 2) {
		char st[80];
		snprintf(g->why, sizeof(g->why), "%s --version did not answer as gnuplot does (%s)", g->exe,
			 status ? status_str(status, st, sizeof(st)) : "no version line");
		return -1;
	}
	snprintf(g->version, sizeof(g->version), "%s", out);
	/* The script uses gnuplot 5 syntax (dash types, NaN key entries). */
	if (major < 5) {
		snprintf(g->why, sizeof(g->why), "%s (%s) is older than gnuplot 5.0", g->version, g->exe);
		return -1;
	}
	return 0;
}

/* A gnuplot string literal: in single quotes only '' is special. */
static void gq(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		fputc(*s == '\n' || *s == '\r' ? ' ' : *s, f);
	}
	fputc('\'', f);
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
	gq(f, l1);
	fprintf(f, " at screen %.4f, screen %.4f textcolor rgb '#444444' noenhanced\n", (PX0 - 40) / W, 1 - 50.0 / H);
	fprintf(f, "set label 3 ");
	gq(f, l2);
	fprintf(f, " at screen %.4f, screen %.4f textcolor rgb '#444444' noenhanced\n", (PX0 - 40) / W, 1 - 68.0 / H);
	fprintf(f, "set label 4 'median of %d samples per point' at screen %.4f, screen %.4f textcolor rgb '#444444'\n",
		r->cfg.reps, (PX1 + 20) / W, 1 - (PY1 - 16) / H);
	fprintf(f, "set label 5 ");
	snprintf(l1, sizeof(l1), "mpkit %s, run took %.0f s", r->machine.mpkit_version, r->seconds);
	gq(f, l1);
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
			gq(f, dat);
			fprintf(f, " index %d using 1:2 with linespoints lc rgb '%s' ", block[m][d], color(m));
			if (d)
				fprintf(f, "lw 1.5 dt (6,4) pt 6 ps 0.6");
			else
				fprintf(f, "lw 2.2 dt solid pt 7 ps 0.6");
			if (!d || block[m][0] < 0) {
				fprintf(f, " title ");
				gq(f, bench_methods[m].label);
				fprintf(f, " noenhanced");
			}
		}
	snprintf(l1, sizeof(l1), "%d other thread%s", cfg->threads[0], cfg->threads[0] == 1 ? "" : "s");
	fprintf(f, "%sNaN with lines lc rgb '#333333' lw 2.2 dt solid title ", first ? "" : ", \\\n     ");
	gq(f, l1);
	if (last > 0)
		fprintf(f, ", \\\n     NaN with lines lc rgb '#333333' lw 1.5 dt (6,4) title '%d other busy thread%s (TLB shootdowns)'",
			cfg->threads[last], cfg->threads[last] == 1 ? "" : "s");
	fprintf(f, "\n");
}

/* The data and the script that draws it, SVG on stdout.  0, or -1 with
 * errno. */
static int write_gnuplot_input(const char *dat, const char *gp, const struct bench_results *r)
{
	int block[BM_COUNT][2];
	FILE *f;

	if (write_data(dat, r, block) || !(f = fopen(gp, "w")))
		return -1;
	write_labels(f, r);
	write_axes(f, r);
	write_lines(f, dat, r, block);
	return fclose(f);
}

/* Copies the SVG gnuplot wrote into the file asked for: written only once
 * gnuplot succeeded, so a failure leaves an older plot alone. */
static int copy_file(const char *from, const char *to)
{
	char buf[1 << 16];
	size_t n;
	int err = 0;
	FILE *in = fopen(from, "r"), *out;
	if (!in)
		return -1;
	if (!(out = fopen(to, "w"))) {
		err = errno;
		fclose(in);
		errno = err;
		return -1;
	}
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		if (fwrite(buf, 1, n, out) != n) {
			err = errno;
			break;
		}
	if (ferror(in) && !err)
		err = errno ? errno : EIO;
	fclose(in);
	if (fclose(out) && !err)
		err = errno;
	errno = err;
	return err ? -1 : 0;
}

/* Draws with gnuplot.  0; -1 with why (gnuplot failed or its input could
 * not be written); -2 with errno when only the copy to path failed. */
static int draw_gnuplot(const char *path, const struct bench_results *r, const struct bench_gnuplot *g, char *why,
			size_t len)
{
	const char *tmp = getenv("TMPDIR");
	char dir[512], dat[600], gp[600], svg[600], st[80];
	int rc = -1, fd = -1;
	struct stat sb;

	snprintf(dir, sizeof(dir), "%s/mpkit-plot.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		snprintf(why, len, "cannot make a temporary directory for gnuplot's input (%s): %s", dir, strerror(errno));
		return -1;
	}
	snprintf(dat, sizeof(dat), "%s/plot.dat", dir);
	snprintf(gp, sizeof(gp), "%s/plot.gp", dir);
	snprintf(svg, sizeof(svg), "%s/plot.svg", dir);
	if (write_gnuplot_input(dat, gp, r)) {
		snprintf(why, len, "cannot write gnuplot's input in %s: %s", dir, strerror(errno));
		goto out;
	}
	/* gnuplot writes the SVG on its stdout, so that the user's file name
	 * never has to be quoted for gnuplot */
	if ((fd = open(svg, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
		snprintf(why, len, "cannot create %s: %s", svg, strerror(errno));
		goto out;
	}
	char *argv[] = { (char *)g->exe, gp, NULL };
	pid_t pid;
	int err = spawn(argv, fd, &pid);
	close(fd);
	if (err) {
		snprintf(why, len, "%s (%s) could not be started: %s", g->version, g->exe, strerror(err));
		goto out;
	}
	int status = reap(pid);
	if (status != 0) {
		snprintf(why, len, "%s (%s) failed (%s; its messages are above on stderr)", g->version, g->exe,
			 status_str(status, st, sizeof(st)));
		goto out;
	}
	if (stat(svg, &sb) || sb.st_size == 0) {
		snprintf(why, len, "%s (%s) exited 0 but wrote no SVG", g->version, g->exe);
		goto out;
	}
	rc = copy_file(svg, path) ? -2 : 0;
out:
	err = errno;
	unlink(dat);
	unlink(gp);
	unlink(svg);
	rmdir(dir);
	errno = err;
	return rc;
}

int bench_plot(const char *path, const struct bench_results *r, const struct bench_gnuplot *g, char *msg,
	       size_t len)
{
	char why[2048];

	switch (draw_gnuplot(path, r, g, why, sizeof(why))) {
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
