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
#include "output.h"

static const char *prog = "mpkit-bench";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [OPTIONS]\n"
		"\n"
		"Measures, side by side, the cost of closing and re-opening a populated region:\n"
		"an mpkit domain switch (hw keys where the CPU has them, and the soft mprotect\n"
		"backend), raw mprotect on 4 KiB pages and on transparent huge pages, mprotect on\n"
		"many small mappings, and libsodium's sodium_mprotect_noaccess/readwrite; with\n"
		"other busy threads in the process, and the first touch after re-opening.\n"
		"Prints a table; progress goes to stderr.\n"
		"\n"
		"options:\n"
		"  --sizes LIST        region sizes, comma-separated, K/M/G suffixes\n"
		"                      (default 4K,64K,2M,64M,1G; capped by free memory)\n"
		"  --threads LIST      counts of other busy threads (default 0,1,2,4)\n"
		"  --reps N            samples per measurement (default 15)\n"
		"  --sample-time US    a sample lasts at least US microseconds (default 5000;\n"
		"                      0: one iteration per sample)\n"
		"  --csv FILE          write every measurement as CSV ('-': stdout)\n"
		"  -J, -j, --json FILE ... as JSON, with the machine and the hw fast path\n"
		"                      ('-': stdout; the table then goes to stderr)\n"
		"  --plot FILE.svg     draw cost against size, log-log, one line per method,\n"
		"                      with gnuplot (apt-get install gnuplot-nox)\n"
		"Output files are opened before the run: one that cannot be written, or\n"
		"a missing gnuplot, fails at once.\n"
		"  --no-pin            do not pin the measuring and the busy threads to CPUs\n"
		"  --mem-fraction F    regions may use this share of MemAvailable (default 0.7)\n"
		"  --smoke             a correctness run: 4K,64K, threads 0,1, 2 samples of one\n"
		"                      iteration; the output says the timings mean nothing\n"
		"  -q, --quiet         no progress on stderr\n"
		"  -h, --help          this text\n",
		prog);
}

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

static const char *need_arg(int argc, char **argv, int *i)
{
	if (*i + 1 >= argc) {
		fprintf(stderr, "%s: %s needs an argument\n", prog, argv[*i]);
		exit(2);
	}
	return argv[++*i];
}

struct opts {
	struct bench_config cfg;
	const char *csv, *json, *plot;
	int sizes_set, threads_set, reps_set, time_set;
};

/* A number (whole: strtol's) that is all of v: 0, or -1. */
static int number(const char *v, int whole, double *x)
{
	char *end;

	*x = whole ? (double)strtol(v, &end, 10) : strtod(v, &end);
	return *end || end == v ? -1 : 0;
}

/* The options into o: -1 to go on, or the exit status (0 after --help). */
static int parse_args(int argc, char **argv, struct opts *o)
{
	struct bench_config *cfg = &o->cfg;
	double x;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return bench_output_ok(prog) ? 0 : 1;
		} else if (!strcmp(a, "--sizes")) {
			int n = parse_list(need_arg(argc, argv, &i), "size", one_size, cfg->sizes, BENCH_MAX_SIZES);
			if (n < 0)
				return 2;
			cfg->nsizes = n;
			o->sizes_set = 1;
		} else if (!strcmp(a, "--threads")) {
			int n = parse_list(need_arg(argc, argv, &i), "thread count", one_thread, cfg->threads, BENCH_MAX_THREADS);
			if (n < 0)
				return 2;
			cfg->nthreads = n;
			o->threads_set = 1;
		} else if (!strcmp(a, "--reps")) {
			if (number(need_arg(argc, argv, &i), 1, &x) || x < 1 || x > BENCH_MAX_REPS) {
				fprintf(stderr, "%s: --reps wants 1..%d\n", prog, BENCH_MAX_REPS);
				return 2;
			}
			cfg->reps = (int)x;
			o->reps_set = 1;
		} else if (!strcmp(a, "--sample-time")) {
			if (number(need_arg(argc, argv, &i), 0, &x) || x < 0 || x > 10e6) {
				fprintf(stderr, "%s: --sample-time wants microseconds, 0..10000000\n", prog);
				return 2;
			}
			cfg->sample_ns = x * 1e3;
			o->time_set = 1;
		} else if (!strcmp(a, "--mem-fraction")) {
			if (number(need_arg(argc, argv, &i), 0, &x) || x <= 0 || x > 1) {
				fprintf(stderr, "%s: --mem-fraction wants a number in (0, 1]\n", prog);
				return 2;
			}
			cfg->mem_fraction = x;
		} else if (!strcmp(a, "--csv")) {
			o->csv = need_arg(argc, argv, &i);
		} else if (!strcmp(a, "--json") || !strcmp(a, "-J") || !strcmp(a, "-j")) {
			o->json = need_arg(argc, argv, &i);
		} else if (!strcmp(a, "--plot")) {
			o->plot = need_arg(argc, argv, &i);
		} else if (!strcmp(a, "--no-pin")) {
			cfg->pin = 0;
		} else if (!strcmp(a, "--smoke")) {
			cfg->smoke = 1;
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			cfg->quiet = 1;
		} else {
			fprintf(stderr, "%s: unknown argument '%s' (try --help)\n", prog, a);
			return 2;
		}
	}
	return -1;
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

	if (argc > 0 && argv[0] && getenv("MPKIT_BENCH_PROG"))
		prog = getenv("MPKIT_BENCH_PROG"); /* "mpkit bench" when run by mpkit */
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
