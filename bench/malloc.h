/* SPDX-License-Identifier: MIT */
/*
 * mpkit-bench-malloc's workloads (bench/malloc_work.c): real programs,
 * each a few steps run one after another in a fresh directory, their
 * inputs written beforehand (untimed) one directory up, and its own
 * (bench/mw_*.c), one step each.
 */
#ifndef MPKIT_BENCH_MALLOC_H
#define MPKIT_BENCH_MALLOC_H

#include <stdint.h>

#define MB_MAX_ARGS 12
#define MB_MAX_STEPS 16
#define MB_MAX_FILES 4
#define MB_MAX_PARTS (MB_MAX_STEPS + MB_MAX_FILES)

struct mb_step {
	const char *what;                /* its name in a mismatch: "git log -p" */
	const char *argv[MB_MAX_ARGS];   /* argv[0] is the workload's program */
	const char *in;                  /* stdin from this file, NULL: /dev/null */
	const char *out;                 /* stdout into this file, NULL: compared */
};

struct mb_work {
	const char *name;                /* for --workloads: "python" */
	const char *prog;                /* the program, on PATH: "python3" */
	const char *what;                /* one line for the header */
	const char *const *env;          /* NAME=VALUE for its runs, NULL-terminated */
	/* Writes the inputs into dir (the runs' parent directory): 0, or -1
	 * with errno. */
	int (*setup)(const char *dir, int smoke);
	const struct mb_step *steps;
	int nsteps;
	const char *files[MB_MAX_FILES]; /* compared after the run, NULL-terminated */
	int own;                         /* prog is one of bench/mw_*.c, beside us, not on PATH */
	const struct mb_step *smoke;     /* its steps for --smoke (NULL: the same as steps) */
};

extern const struct mb_work mb_works[];
extern const int mb_nworks;

/* Inputs into dir/name (malloc_work.c; also mpkit bench guard's): 0, or
 * -1 with errno.  Lines of words and numbers from seed, text that
 * compresses and sorts like text; a script with its size in it (fmt
 * takes one int, n). */
int mb_write_text(const char *dir, const char *name, long lines, uint64_t seed);
int mb_write_script(const char *dir, const char *name, const char *fmt, int n);

/* ---- malloc_run.c: one run of a workload ---- */
struct mb_run {
	double secs;                 /* its steps' wall time, each from fork to wait4 */
	long maxrss_kib;             /* the largest ru_maxrss wait4 gave for a step */
	uint64_t part[MB_MAX_PARTS]; /* a hash of each compared stdout, then of each file */
	int nparts;
	int failed;
	char why[600];               /* what failed */
};

/* Runs w's steps (the program at prog, with envp) in dir/run, made afresh
 * and removed after; a step still running after timeout seconds is
 * killed with its process group, and the run fails. */
void mb_run(const struct mb_work *w, const char *prog, const char *dir, char *const envp[], double timeout,
	    struct mb_run *r);
/* What part i of w's runs is: a step's name, or a file's. */
const char *mb_part_name(const struct mb_work *w, int i);
/* rm -rf path: 0, or -1 with errno. */
int mb_rmtree(const char *path);

/* ---- malloc_count.c: the fast path's instructions ---- */
#define MB_MAX_MODS 8
struct mb_count {
	double insns, syscalls, wrpkru; /* per malloc+free pair */
	char mod[MB_MAX_MODS][64];      /* the files they ran in: "libc.so.6" */
	double modn[MB_MAX_MODS];       /* the instructions per pair in each */
	int nmod;
	char why[300];                  /* why it could not count */
};

/* Single-steps prog (bench/mw_count.c) with envp for `few` and then
 * `many` malloc+free pairs of size bytes: the difference per pair into
 * c; 0, or -1 with c->why. */
int mb_count(const char *prog, char *const envp[], long size, long few, long many, struct mb_count *c);

#endif
