/* SPDX-License-Identifier: MIT */
/* The benchmarks' options, progress and stop (options.h). */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "options.h"
#include "output.h"
#include "timing.h"

#define MAX_OPTS 32

const char *bench_prog(const char *argv0, const char *sub)
{
	static char name[64];

	if (!getenv("MPKIT_BENCH_PROG"))
		return argv0;
	snprintf(name, sizeof(name), "mpkit bench%s%s", sub ? " " : "", sub ? sub : "");
	return name;
}

/* A table's end: neither a name nor a letter. */
static int end(const struct bench_opt *o)
{
	return !o->name && !o->letter;
}

void bench_usage(const struct bench_cli *c, FILE *f)
{
	char left[64];

	fprintf(f, "usage: %s [OPTIONS]\n%s\noptions (--opt VALUE or --opt=VALUE):\n", c->prog, c->about);
	for (const struct bench_opt *o = c->opts; !end(o); o++) {
		if (!o->help)
			continue;
		if (o->letter)
			snprintf(left, sizeof(left), "-%c, --%s%s%s", o->letter, o->name, o->arg ? " " : "",
				 o->arg ? o->arg : "");
		else
			snprintf(left, sizeof(left), "    --%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
		/* each line of help, the later ones under the first */
		for (const char *h = o->help; *h;) {
			size_t n = strcspn(h, "\n");
			fprintf(f, "  %-22s %.*s\n", h == o->help ? left : "", (int)n, h);
			h += n + (h[n] == '\n');
		}
	}
	fprintf(f, "  %-22s %s\n%s", "-h, --help", "this text", c->after ? c->after : "");
	for (const struct bench_opt *o = c->opts; !end(o); o++)
		if (!o->help && o->name)
			fprintf(f, "(--%s: an old name, still taken)\n", o->name);
}

/* One option's value into its destination: 0, or -1 after a message. */
static int take(const struct bench_cli *c, const struct bench_opt *o, const char *v)
{
	char *end;
	double x;

	if (o->given)
		*o->given = 1;
	switch (o->kind) {
	case BO_FLAG:
		*(int *)o->dest = 1;
		return 0;
	case BO_STR:
		*(const char **)o->dest = v;
		return 0;
	case BO_FN:
		return o->fn(v, o->dest);
	}
	x = o->kind == BO_INT ? (double)strtol(v, &end, 10) : strtod(v, &end);
	if (*end || end == v || !(x >= o->min && x <= o->max)) {
		fprintf(stderr, "%s: --%s wants %s from %g to %g, not '%s'\n", c->prog, o->name,
			o->kind == BO_INT ? "a whole number" : "a number", o->min, o->max, v);
		return -1;
	}
	if (o->kind == BO_INT)
		*(int *)o->dest = (int)x;
	else
		*(double *)o->dest = x;
	return 0;
}

int bench_options(const struct bench_cli *c, int argc, char **argv)
{
	struct option lo[MAX_OPTS + 2] = { { "help", no_argument, NULL, 'h' } };
	char shorts[2 * MAX_OPTS + 4] = ":h";
	int n = 1, k, idx;

	for (int i = 0; !end(&c->opts[i]) && n <= MAX_OPTS; i++) {
		const struct bench_opt *o = &c->opts[i];
		if (o->name)
			lo[n++] = (struct option){ o->name, o->kind == BO_FLAG ? no_argument : required_argument, NULL,
						   256 + i };
		if (o->letter)
			snprintf(shorts + strlen(shorts), sizeof(shorts) - strlen(shorts), "%c%s", o->letter,
				 o->kind == BO_FLAG ? "" : ":");
	}
	opterr = 0;
	while ((k = getopt_long(argc, argv, shorts, lo, &idx)) != -1) {
		const struct bench_opt *o = NULL;
		if (k == 'h') {
			bench_usage(c, stdout);
			return bench_output_ok(c->prog) ? 0 : 1;
		}
		for (int i = 0; k < 256 && !end(&c->opts[i]) && !o; i++)
			o = c->opts[i].letter == k ? &c->opts[i] : NULL;
		if (k >= 256)
			o = &c->opts[k - 256];
		if (k == '?' || k == ':') {
			const char *a = argv[optind - 1];
			if (k == '?' && optopt && !strncmp(a, "--", 2) && strchr(a, '='))
				fprintf(stderr, "%s: %.*s takes no value\n", c->prog, (int)strcspn(a, "="), a);
			else
				fprintf(stderr, "%s: %s '%s'\n", c->prog,
					k == ':' ? "a value is missing after" : "unknown option", a);
			break;
		}
		if (take(c, o, optarg))
			return 2;
	}
	if (k == -1 && optind == argc)
		return -1;
	if (k == -1)
		fprintf(stderr, "%s: unknown argument '%s'\n", c->prog, argv[optind]);
	fprintf(stderr, "usage: %s [OPTIONS] (%s --help)\n", c->prog, c->prog);
	return 2;
}

int bench_smoke_options(const char *prog, const char *about, int argc, char **argv, int *smoke)
{
	int quiet = 0;
	const struct bench_opt opts[] = {
		{ "smoke", 0, BO_FLAG, smoke, NULL, "fewer iterations: a correctness run" },
		{ "quiet", 'q', BO_FLAG, &quiet, NULL, "no progress on stderr" },
		{ "quick", 0, BO_FLAG, smoke, NULL, NULL },
		{ NULL, 0 },
	};
	const struct bench_cli c = { prog, about, NULL, opts };
	int rc = bench_options(&c, argc, argv);

	bench_progress_start(quiet);
	return rc;
}

/* ---- progress ---- */

static int progress_tty, progress_quiet;
static double progress_t0, progress_last;

void bench_progress_start(int quiet)
{
	progress_quiet = quiet;
	progress_tty = isatty(2);
	progress_t0 = progress_last = now_ns();
}

void bench_progress(const char *fmt, ...)
{
	char line[256];
	va_list ap;

	double t = now_ns();
	/* a log file gets a line every few seconds, a run shorter gets none */
	if (progress_quiet || (!progress_tty && t - progress_last < 5e9))
		return;
	progress_last = t;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	double s = (t - progress_t0) / 1e9;
	if (progress_tty)
		fprintf(stderr, "\r\033[K[%5.1fs] %s", s, line);
	else
		fprintf(stderr, "[%5.1fs] %s\n", s, line);
}

void bench_progress_done(void)
{
	if (!progress_quiet && progress_tty)
		fprintf(stderr, "\r\033[K");
}

/* ---- stop ---- */

volatile sig_atomic_t bench_stop;

static void on_stop(int sig)
{
	bench_stop = sig;
}

void bench_catch_stop(void)
{
	struct sigaction sa = { .sa_handler = on_stop };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}
