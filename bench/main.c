/* SPDX-License-Identifier: MIT */
/*
 * mpkit-bench: the command behind `mpkit bench` and `make bench`.
 * Exit codes: 0 ok, 1 a method failed (or an output could not be written),
 * 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "options.h"
#include "output.h"

static const char *prog = "mpkit-bench";

static int parse_list(const char *arg, const char *what, int (*one)(const char *, void *, int), void *out, int max)
{
	char *copy = strdup(arg), *save = NULL;
	int n = 0;
	if (!copy)
		return -1;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == max || one(tok, out, n)) {
			fprintf(stderr, "%s: bad %s '%s'%s\n", prog, what, tok, n == max ? " (too many)" : "");
			free(copy);
			return -1;
		}
		n++;
	}
	free(copy);
	if (!n)
		fprintf(stderr, "%s: empty %s list\n", prog, what);
	return n ? n : -1;
}

static int one_size(const char *s, void *out, int i)
{
	size_t v;
	if (bench_parse_size(s, &v) || v == 0)
		return -1;
	v = (v + 4095) & ~(size_t)4095; /* whole pages */
	((size_t *)out)[i] = v;
	return 0;
}

static int one_thread(const char *s, void *out, int i)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (*end || end == s || v < 0 || v > BENCH_MAX_BUSY)
		return -1;
	((int *)out)[i] = (int)v;
	return 0;
}

struct opts {
	struct bench_config cfg;
	const char *csv, *json, *plot;
	int sizes_set, threads_set, reps_set, time_set, no_pin;
};

static int sizes_fn(const char *v, void *dest)
{
	struct bench_config *cfg = dest;
	int n = parse_list(v, "size", one_size, cfg->sizes, BENCH_MAX_SIZES);

	cfg->nsizes = n > 0 ? n : cfg->nsizes;
	return n > 0 ? 0 : -1;
}

static int threads_fn(const char *v, void *dest)
{
	struct bench_config *cfg = dest;
	int n = parse_list(v, "thread count", one_thread, cfg->threads, BENCH_MAX_THREADS);

	cfg->nthreads = n > 0 ? n : cfg->nthreads;
	return n > 0 ? 0 : -1;
}

/* The options into o: -1 to go on, or the exit status (0 after --help). */
static int parse_args(int argc, char **argv, struct opts *o)
{
	struct bench_config *c = &o->cfg;
	double sample_us = c->sample_ns / 1e3;
	const struct bench_opt opts[] = {
		{ "sizes", 0, BO_FN, c, "LIST", "region sizes, comma-separated, K/M/G suffixes\n"
		  "(default 4K,64K,2M,64M,1G; capped by free memory)", .fn = sizes_fn, .given = &o->sizes_set },
		{ "threads", 0, BO_FN, c, "LIST", "counts of other busy threads (default 0,1,2,4)", .fn = threads_fn,
		  .given = &o->threads_set },
		{ "reps", 0, BO_INT, &c->reps, "N", "samples per measurement (default 15)", 1, BENCH_MAX_REPS,
		  .given = &o->reps_set },
		{ "sample-time", 0, BO_NUM, &sample_us, "US", "a sample lasts at least US microseconds (default\n"
		  "5000; 0: one iteration per sample)", 0, 10e6, .given = &o->time_set },
		{ "csv", 0, BO_STR, &o->csv, "FILE", "write every measurement as CSV ('-': stdout)" },
		{ "json", 'j', BO_STR, &o->json, "FILE", "... as JSON, with the machine and the hw fast path\n"
		  "('-': stdout; the table then goes to stderr); -J too" },
		{ "plot", 0, BO_STR, &o->plot, "FILE.svg", "draw cost against size, log-log, one line per\n"
		  "method, with gnuplot (apt-get install gnuplot-nox)" },
		{ "no-pin", 0, BO_FLAG, &o->no_pin, NULL, "do not pin the measuring and the busy threads to CPUs" },
		{ "mem-fraction", 0, BO_NUM, &c->mem_fraction, "F", "regions may use this share of MemAvailable\n"
		  "(default 0.7)", 1e-9, 1 },
		{ "smoke", 0, BO_FLAG, &c->smoke, NULL, "a correctness run: 4K,64K, threads 0,1, 2 samples of one\n"
		  "iteration; the output says the timings mean nothing" },
		{ "quiet", 'q', BO_FLAG, &c->quiet, NULL, "no progress on stderr" },
		{ NULL, 'J', BO_STR, &o->json, "FILE", NULL },
		{ NULL, 0 },
	};
	const struct bench_cli cli = {
		prog,
		"\n"
		"Measures, side by side, the cost of closing and re-opening a populated region:\n"
		"an mpkit domain switch (hw keys where the CPU has them, and the soft mprotect\n"
		"backend), raw mprotect on 4 KiB pages and on transparent huge pages, mprotect on\n"
		"many small mappings, and libsodium's sodium_mprotect_noaccess/readwrite; with\n"
		"other busy threads in the process, and the first touch after re-opening.\n"
		"Prints a table; progress goes to stderr.\n",
		"Output files are opened before the run: one that cannot be written, or\n"
		"a missing gnuplot, fails at once.\n",
		opts,
	};
	int rc = bench_options(&cli, argc, argv);

	c->sample_ns = sample_us * 1e3;
	c->pin = !o->no_pin;
	return rc;
}

/* --smoke: what was not asked for is as small as it gets. */
static void smoke_defaults(struct opts *o)
{
	struct bench_config *cfg = &o->cfg;

	if (!o->sizes_set) {
		cfg->sizes[0] = 4 << 10;
		cfg->sizes[1] = 64 << 10;
		cfg->nsizes = 2;
	}
	if (!o->threads_set) {
		cfg->threads[0] = 0;
		cfg->threads[1] = 1;
		cfg->nthreads = 2;
	}
	if (!o->reps_set)
		cfg->reps = 2;
	if (!o->time_set)
		cfg->sample_ns = 0;
}

/* Before the run, which can take minutes: every output can be written
 * (files[] open, the table's stream in *table), and gnuplot is there (g)
 * if a plot is asked for.  -1 to go on, or the exit status. */
static int open_outputs(const struct opts *o, FILE *files[2], FILE **table, struct bench_gnuplot *g)
{
	const char *outs[] = { o->csv, o->json };

	for (int i = 0; i < 2; i++) {
		if (!outs[i])
			continue;
		if (!strcmp(outs[i], "-")) {
			files[i] = stdout;
			*table = stderr;
		} else if (!(files[i] = fopen(outs[i], "w"))) {
			fprintf(stderr, "%s: %s: %s\n", prog, outs[i], strerror(errno));
			return 1;
		}
	}
	if (o->csv && o->json && !strcmp(o->csv, "-") && !strcmp(o->json, "-")) {
		fprintf(stderr, "%s: --csv and --json cannot both go to stdout\n", prog);
		return 2;
	}
	if (!o->plot)
		return -1;
	if (!strcmp(o->plot, "-")) {
		fprintf(stderr, "%s: --plot wants a file name (the SVG is not written to stdout)\n", prog);
		return 2;
	}
	int fd = open(o->plot, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, o->plot, strerror(errno));
		return 1;
	}
	close(fd);
	if (bench_gnuplot_find(g)) {
		fprintf(stderr, "%s: --plot: %s (install gnuplot: apt-get install gnuplot-nox, "
				"or leave out --plot)\n", prog, g->why);
		return 1;
	}
	return -1;
}

/* The CSV, the JSON and the plot, after the table: 0, or 1 if one failed. */
static int write_outputs(const struct opts *o, FILE *files[2], FILE *table, const struct bench_results *r,
			 const struct bench_gnuplot *g)
{
	const char *outs[] = { o->csv, o->json };
	int (*writers[])(FILE *, const struct bench_results *) = { bench_write_csv, bench_write_json };
	int rc = 0;

	for (int i = 0; i < 2; i++) {
		if (!files[i])
			continue;
		int bad = writers[i](files[i], r);
		if (files[i] != stdout && fclose(files[i]))
			bad = 1;
		if (bad) {
			fprintf(stderr, "%s: writing %s: %s\n", prog, outs[i], strerror(errno));
			rc = 1;
		} else if (files[i] != stdout) {
			fprintf(table, "wrote %s\n", outs[i]);
		}
	}
	if (o->plot) {
		char msg[2048];
		fflush(NULL); /* our lines before anything gnuplot says on stderr */
		if (bench_plot(o->plot, r, g, msg, sizeof(msg))) {
			fprintf(stderr, "%s: plot: %s\n", prog, msg);
			rc = 1;
		} else {
			fprintf(table, "plot: %s\nwrote %s\n", msg, o->plot);
		}
	}
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o = { .csv = NULL };
	FILE *files[2] = { NULL, NULL }, *table = stdout;
	struct bench_gnuplot g;
	int rc;

	prog = bench_prog(argv[0], NULL);
	bench_config_defaults(&o.cfg);
	if ((rc = parse_args(argc, argv, &o)) >= 0)
		return rc;
	if (o.cfg.smoke)
		smoke_defaults(&o);
	o.cfg.exe_label = NULL; /* the path of the file that holds mpk_set */
	if ((rc = open_outputs(&o, files, &table, &g)) >= 0)
		return rc;

	struct bench_results *r = bench_run(&o.cfg);
	if (!r) {
		fprintf(stderr, "%s: %s\n", prog, strerror(errno));
		return 1;
	}
	bench_print(table, r);
	fflush(table);
	rc = write_outputs(&o, files, table, r, &g);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "%s: writing the output failed: %s\n", prog, strerror(errno));
		rc = 1;
	}
	for (int m = 0; m < BM_COUNT; m++)
		for (int s = 0; s < o.cfg.nsizes; s++)
			if (bench_setup(r, m, s)->status == BS_FAILED) {
				fprintf(stderr, "%s: %s at %zu bytes failed: %s\n", prog, bench_methods[m].label,
					o.cfg.sizes[s], bench_setup(r, m, s)->why);
				rc = 1;
			}
	bench_free(r);
	return rc;
}
