/* SPDX-License-Identifier: MIT */
/*
 * mpkit-bench: what protection keys buy over mprotect(), measured side by
 * side.  For each region size the engine closes and re-opens a populated
 * region with every method below, with 0..N other busy threads in the
 * process, and times the first touch of every page after the re-open.
 *
 * The engine is a library so that the CLI (bench/main.c) and the VM smoke
 * test (tests/t_bench_smoke.c) run the same code.  It uses mpkit's public
 * API only.  Every backend's measurements run in a forked child that sets
 * MPKIT_BACKEND, so the process calling bench_run() must not have called
 * mpkit before (the backend choice is sticky per process).
 */
#ifndef MPKIT_BENCH_H
#define MPKIT_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gnuplot.h"

enum bench_method {
	BM_HW_ENTER,     /* mpkit, hw backend: s = mpk_enter(d, NONE); mpk_leave(&s) */
	BM_HW_SET,       /* mpkit, hw backend: mpk_set(d, NONE); mpk_set(d, RW) */
	BM_SOFT_ENTER,   /* the same two on the soft backend (mpk_alloc memory) */
	BM_SOFT_SET,
	BM_SOFT_ISO,     /* soft set pair on an isolated mapping (mpk_adopt) */
	BM_SOFT_THP,     /* soft set pair on an adopted THP region */
	BM_MPROTECT,     /* mprotect(NONE) + mprotect(RW), one mapping, 4 KiB pages */
	BM_MPROTECT_THP, /* the same on transparent huge pages */
	BM_MPROTECT_MANY,/* the same size as many small mappings, one call each */
	BM_SODIUM,       /* sodium_mprotect_noaccess + _readwrite on sodium_malloc */
	BM_COUNT
};

enum bench_group { BG_HW, BG_SOFT }; /* which child measures a method */

struct bench_method_info {
	const char *id;    /* stable, for CSV/JSON: "soft_set" */
	const char *label; /* for the table and the plot */
	int group;         /* BG_* */
	int backend_row;   /* 1: an mpkit domain switch */
	int thp;           /* needs 2 MiB-aligned sizes of at least 2 MiB */
};
extern const struct bench_method_info bench_methods[BM_COUNT];

#define BENCH_MAX_SIZES 16
#define BENCH_MAX_THREADS 16
#define BENCH_MAX_REPS 10000
#define BENCH_MAX_BUSY 64 /* other threads in one cell */

struct bench_config {
	size_t sizes[BENCH_MAX_SIZES]; /* bytes, multiples of the page size */
	int nsizes;
	int threads[BENCH_MAX_THREADS]; /* other busy threads */
	int nthreads;
	int reps;              /* samples per cell */
	double sample_ns;      /* a sample lasts at least this long (0: one iteration) */
	int pin;               /* pin the measuring thread and the busy threads */
	int quiet;             /* no progress on stderr */
	int smoke;             /* a correctness run: timings are not the point */
	double mem_fraction;   /* of MemAvailable the regions may use at once */
	const char *exe_label; /* the disassembled file's name in the output
				* (NULL: its path) */
};

/* Sizes 4K 64K 2M 64M 1G, threads 0 1 2 4, 15 samples of >= 5 ms. */
void bench_config_defaults(struct bench_config *c);

enum bench_status {
	BS_NOT_RUN = 0,
	BS_OK,
	BS_NA,      /* not available here (no PKU, no libsodium, too small for THP) */
	BS_SKIPPED, /* capped by free memory */
	BS_FAILED,
};

/* Statistics of a set of samples, ns. */
struct bench_stat {
	double median, p10, p90;
};

struct bench_cell { /* one method, size, thread count */
	int status;
	int n;                 /* samples taken */
	long iters_switch;     /* iterations per switch sample */
	long iters_touch;      /* iterations per touch sample */
	double *sw, *touch, *base; /* samples, ns per iteration */
	double *raw;           /* mpkit rows: an mprotect pair on the very same region */
	struct bench_stat s_sw, s_touch, s_base, s_raw;
	struct bench_stat s_pair; /* sw[i] / raw[i]: each round's mpkit over mprotect */
	double ratio;          /* median / the reference switch's median, 0 if none */
};

struct bench_setup { /* one method, size: the region and its checks */
	int status;
	char why[200];         /* for NA/SKIPPED/FAILED */
	char note[200];        /* "1 mapping, AnonHugePages 0 kB" */
	long huge_kb;          /* AnonHugePages of the region after populating, -1 unknown */
	long huge_kb_after;    /* ... after the measurements */
	long locked_kb;        /* Locked (sodium), -1 unknown */
	long mappings;         /* mappings the region is made of */
	size_t chunk;          /* bytes per mapping */
	int fault_code;        /* si_code of a read while closed (verification) */
	int verified;          /* closed: faults; re-opened: reads and writes work */
	long vma_kb;           /* size of the mapping (VMA) holding the region, -1 unknown */
	int named;             /* that VMA carries an [anon:...] name */
	int batch;             /* which group of methods it was measured with */
};

struct bench_nochange { /* rights that do not change: must cost no syscall */
	int status;
	char why[160];
	struct bench_stat set_same;   /* mpk_set(d, RW) while RW, ns per call */
	struct bench_stat enter_same; /* enter(d, RW) + leave while RW, ns per pair */
	unsigned long long calls;     /* calls made */
	unsigned long long mprotects; /* mprotect() calls mpkit made meanwhile */
};

struct bench_fastpath { /* from the disassembly of the file that holds mpk_set */
	int ok;
	char why[200];
	char file[256];
	struct {
		const char *name;
		int insns;   /* straight-line path from entry to the first ret */
		int rdpkru, wrpkru, branches, calls, syscalls, locked;
		int found;
	} fn[3];     /* mpk_set, mpk_enter, mpk_leave */
};

struct bench_machine {
	char cpu[128];
	int ncpus;             /* online */
	int cpus_allowed;      /* in our affinity mask */
	int cpu_list[256];     /* allowed CPUs; the measuring thread runs on the
	                        * first, busy threads round robin on the others */
	int pinned;            /* threads are pinned (cfg.pin and 2+ CPUs) */
	int hypervisor;        /* "hypervisor" CPU flag */
	int emulated;          /* QEMU TCG: timings mean nothing */
	char kernel[160];
	double mem_total, mem_avail; /* bytes */
	char thp_enabled[64], thp_defrag[64];
	char damon[160];       /* running DAMON contexts ("paddr: pageout"), "" if none */
	int cpu_pku, cpu_ospke, kernel_pkeys; /* from mpk_info() in a probe child */
	int auto_backend;      /* MPK_BACKEND_* mpkit picks by itself */
	int hw_available;
	char mpkit_version[32];
	char sodium_version[32]; /* "" when built without libsodium */
	double timer_ns;       /* cost of one clock read */
	size_t page;
};

struct bench_results {
	struct bench_config cfg;
	struct bench_machine machine;
	struct bench_fastpath fastpath;
	int ref_method;        /* the domain switch ratios refer to */
	char size_note[BENCH_MAX_SIZES][200]; /* capped sizes, batches */
	int batch_max[BENCH_MAX_SIZES]; /* regions of one size that may exist at once */
	struct bench_cell *cells;   /* [BM_COUNT][nsizes][nthreads] */
	struct bench_setup *setups; /* [BM_COUNT][nsizes] */
	struct bench_nochange nochange[2]; /* [BG_HW], [BG_SOFT] */
	char group_error[2][200];   /* a child that died */
	double seconds;
};

static inline struct bench_cell *bench_cell(const struct bench_results *r, int m, int s, int t)
{
	return &r->cells[((size_t)m * r->cfg.nsizes + s) * r->cfg.nthreads + t];
}

static inline struct bench_setup *bench_setup(const struct bench_results *r, int m, int s)
{
	return &r->setups[(size_t)m * r->cfg.nsizes + s];
}

/* Run everything.  NULL with errno on a setup failure (bad config, no
 * memory); failures of single methods are recorded in their cells. */
struct bench_results *bench_run(const struct bench_config *cfg);
void bench_free(struct bench_results *r);

/* median, p10, p90 of n samples */
void bench__stat(struct bench_stat *st, const double *v, int n);

/* ---- machine.c ---- */
void bench_machine_probe(struct bench_machine *m);
/* The fast path's instructions, from the file this process loaded mpk_set
 * from (label: its name in the output, NULL: its path). */
void bench_fastpath_probe(struct bench_fastpath *f, const char *label);
/* ---- extent.c ---- */
/* The file the function fn was loaded from (its path in file) and its
 * extent [*start, *end) in that file's addresses; 0, or -1 unknown. */
int bench_fn_extent(const void *fn, char *file, size_t len, unsigned long *start, unsigned long *end);
/* A field ("AnonHugePages", "Locked") of the mapping holding addr, in kB,
 * summed over the mappings that lie inside [addr, addr+len); -1 unknown. */
long bench_smaps_kb(const void *addr, size_t len, const char *field);
/* The mapping holding addr: its size in kB, and whether it is named. */
long bench_vma_kb(const void *addr, int *named);

/* ---- report.c ---- */
void bench_print(FILE *f, const struct bench_results *r);
/* Write to f (not closed): 0, or -1 when a write failed. */
int bench_write_csv(FILE *f, const struct bench_results *r);
int bench_write_json(FILE *f, const struct bench_results *r);
/* "4 KiB", "1 GiB"; "1.23 us" */
const char *bench_size_str(size_t bytes, char *buf, size_t len);
const char *bench_ns_str(double ns, char *buf, size_t len);
int bench_parse_size(const char *s, size_t *out);

/* ---- plot.c: log-log SVG, by gnuplot (gnuplot.c) ---- */
/* Draws the plot into path with g (from bench_gnuplot_find()).  0: drawn,
 * msg says by what; -1: not drawn, msg says why. */
int bench_plot(const char *path, const struct bench_results *r, const struct bench_gnuplot *g, char *msg,
	       size_t len);

#endif
