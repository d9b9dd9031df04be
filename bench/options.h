/* SPDX-License-Identifier: MIT */
/*
 * What every benchmark program shares (bench/options.c): one option loop
 * (getopt_long: --opt=value and --opt value, -h/--help, the usage written
 * from the table), its name in messages, progress on stderr, and a run
 * stopped by SIGINT/SIGTERM.  The options have one name across the
 * benchmarks: --smoke (a correctness run), --reps N (repetitions: runs,
 * rounds, samples), --quiet.
 */
#ifndef MPK_BENCH_OPTIONS_H
#define MPK_BENCH_OPTIONS_H

#include <signal.h>
#include <stdio.h>

enum bench_opt_kind {
	BO_FLAG, /* int *dest = 1 */
	BO_INT,  /* int *dest, whole, in [min, max] */
	BO_NUM,  /* double *dest, in [min, max] */
	BO_STR,  /* const char **dest */
	BO_FN,   /* fn(value, dest): 0, or -1 after a message */
};

struct bench_opt {
	const char *name;   /* --name; NULL ends the table */
	int letter;         /* -l too, 0: none */
	int kind;           /* BO_* */
	void *dest;
	const char *arg;    /* the value's name in the usage: "N" */
	const char *help;   /* its lines in the usage; NULL: an old name kept as an alias */
	double min, max;    /* BO_INT, BO_NUM */
	int (*fn)(const char *value, void *dest);
	int *given;         /* set to 1 when given (NULL: not kept) */
};

struct bench_cli {
	const char *prog;   /* in messages: "mpkit bench alloc" under mpkit, else argv[0] */
	const char *about;  /* after the usage line; the options follow */
	const char *after;  /* after the options (NULL: nothing) */
	const struct bench_opt *opts;
};

/* "mpkit bench SUB" when mpkit runs the program (MPKIT_BENCH_PROG), else
 * argv0 (sub NULL: "mpkit bench"). */
const char *bench_prog(const char *argv0, const char *sub);

/* The options into their destinations: -1 to go on (optind is the first
 * operand: a benchmark takes none, bench_options says so), 0 after
 * --help (1 if stdout failed), 2 after a usage error on stderr. */
int bench_options(const struct bench_cli *c, int argc, char **argv);
void bench_usage(const struct bench_cli *c, FILE *f);
/* The same for a benchmark whose options are --smoke (--quick its old
 * name), into *smoke, and --quiet; progress starts (-1 returned). */
int bench_smoke_options(const char *prog, const char *about, int argc, char **argv, int *smoke);

/* Progress on stderr, unless quiet: one line rewritten on a terminal, a
 * line every 5 s at most elsewhere (a log: a short run writes none), with
 * the seconds since bench_progress_start(). */
void bench_progress_start(int quiet);
void bench_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void bench_progress_done(void);

/* SIGINT, SIGTERM and SIGHUP set bench_stop (the signal's number) instead
 * of ending the process: the run stops, kills and reaps what it started,
 * removes what it wrote and ends with 128 + bench_stop (130 for SIGINT).
 * No SA_RESTART: a wait returns EINTR. */
extern volatile sig_atomic_t bench_stop;
void bench_catch_stop(void);

#endif
