/* SPDX-License-Identifier: MIT */
/*
 * mpkit-bench-malloc (`mpkit bench malloc`): real programs under glibc's
 * malloc, jemalloc, mimalloc and mpkit's drop-in allocator with its
 * metadata sealed and open, the way `mpkit run` runs them (LD_PRELOAD of
 * libmpkit-malloc.so, MPKIT_HEAP_META).  Rounds interleave: each round
 * runs every workload under every allocator once, the allocators' order
 * rotated from round to round, so that a slow spell of a loaded machine
 * falls on all of them.  Every run's output is compared with glibc's; a
 * difference, a failure or a timeout is an error in that cell (and exit
 * status 1), never a figure.  It installs nothing: a missing program or
 * allocator is named and left out.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mpkit.h>

#include "gnuplot.h"
#include "malloc.h"
#include "options.h"
#include "output.h"
#include "timing.h"

extern char **environ;

enum { A_GLIBC, A_JEMALLOC, A_MIMALLOC, A_SEALED, A_OPEN, A_COUNT };

struct alloc {
	const char *key;     /* for --allocators */
	const char *name;    /* in the table */
	const char *lib;     /* what LD_PRELOAD names, NULL for glibc */
	const char *meta;    /* MPKIT_HEAP_META for the drop-in */
	int on;              /* asked for and there */
	char path[PATH_MAX]; /* the library's path, as a program loaded it */
	char why[400];       /* why it is left out */
};

static struct alloc al[A_COUNT] = {
	{ "glibc", "glibc", NULL, NULL },
	{ "jemalloc", "jemalloc", "libjemalloc.so.2", NULL },
	{ "mimalloc", "mimalloc", "libmimalloc.so.2", NULL },
	{ "sealed", "mpkit sealed", "libmpkit-malloc.so", "closed" },
	{ "open", "mpkit open", "libmpkit-malloc.so", "open" },
};

#define MAX_ROUNDS 100

#define SPEED_MIN 0.95 /* mpkit's targets for its drop-in: geometric means */
#define SPEED_FLOOR 0.85
#define RSS_MAX 1.10
#define MB_MAX_WORKS 16

struct opts {
	int rounds, smoke, quiet, count;
	double timeout;
	const char *workloads, *allocators, *plot;
};

struct cell {
	struct mb_run run[MAX_ROUNDS];
	int failed;        /* a run failed, or its output differs from glibc's */
	const char *why;   /* the first failure */
	double secs;       /* medians */
	double rss_kib;
};

struct state {
	struct opts o;
	char tmp[PATH_MAX];
	int on[MB_MAX_WORKS];              /* the workloads that run */
	char prog[MB_MAX_WORKS][PATH_MAX]; /* their programs' paths */
	struct cell cell[MB_MAX_WORKS][A_COUNT];
	char mismatch[MB_MAX_WORKS][A_COUNT][600];
};

static const char *me = "mpkit-bench-malloc";

/* A comma-separated list has name in it (NULL: every name). */
static int listed(const char *list, const char *name)
{
	size_t n = strlen(name);

	if (!list)
		return 1;
	for (const char *p = list; *p;) {
		size_t k = strcspn(p, ",");
		if (k == n && !strncmp(p, name, n))
			return 1;
		p += k + (p[k] == ',');
	}
	return 0;
}

/* Workload w is in the list: by its name, or its group's ("real": the
 * programs on PATH, "own": bench/mw_*.c). */
static int work_listed(const char *list, int w)
{
	return listed(list, mb_works[w].name) || (list && listed(list, mb_works[w].own ? "own" : "real"));
}

/* Every name in list is one of names[] (a typo is a usage error). */
static int list_ok(const char *list, const char *const *names, int n, const char *opt)
{
	for (const char *p = list; p && *p;) {
		size_t k = strcspn(p, ",");
		int ok = 0;
		for (int i = 0; i < n && !ok; i++)
			ok = strlen(names[i]) == k && !strncmp(p, names[i], k);
		if (!ok) {
			fprintf(stderr, "%s: %s: unknown name '%.*s'\n", me, opt, (int)k, p);
			return 0;
		}
		p += k + (p[k] == ',');
	}
	return 1;
}

/* The options into o: -1 to go on, or the exit status. */
static int parse(int argc, char **argv, struct opts *o)
{
	char names[MB_MAX_WORKS * 16 + 128] = "", about[2048];
	const char *anames[A_COUNT - 1], *wnames[MB_MAX_WORKS + 2] = { "real", "own" };
	const struct bench_opt opts[] = {
		{ "reps", 0, BO_INT, &o->rounds, "N", "rounds, each figure their median (default 5; --smoke: 1)", 1,
		  MAX_ROUNDS },
		{ "smoke", 0, BO_FLAG, &o->smoke, NULL, "small inputs, one round: a correctness run (the timings\n"
		  "mean nothing, no verdict against the targets)" },
		{ "workloads", 0, BO_STR, &o->workloads, "LIST", names },
		{ "allocators", 0, BO_STR, &o->allocators, "LIST", "of: jemalloc,mimalloc,sealed,open (default:\n"
		  "all, but sealed on the soft backend; glibc, the\n"
		  "reference, always runs)" },
		{ "timeout", 0, BO_NUM, &o->timeout, "S", "a step still running after S seconds fails its\n"
		  "cell (default 600; --smoke: 120)", 1e-3, 1e6 },
		{ "plot", 0, BO_STR, &o->plot, "FILE.svg", "the ratios as bar charts, drawn by gnuplot when\n"
		  "it is there (Debian: gnuplot-nox)" },
		{ "count", 0, BO_FLAG, &o->count, NULL, "instead of the workloads: the instructions of a\n"
		  "malloc+free pair of a cached small block (32 and 256\n"
		  "bytes) under each allocator, single-stepped (ptrace)" },
		{ "quiet", 'q', BO_FLAG, &o->quiet, NULL, "no progress on stderr" },
		{ "rounds", 0, BO_INT, &o->rounds, "N", NULL, 1, MAX_ROUNDS },
		{ NULL, 0 },
	};
	const struct bench_cli cli = { me, about,
		"Programs come from PATH (a script such as pyenv's shim is passed over for\n"
		"the program behind it); the drop-in from MPKIT_MALLOC_LIB, else beside this\n"
		"program.  Ctrl-C (SIGINT, SIGTERM) stops the run: what runs is killed, the\n"
		"temporary directory removed, exit 130 (143).\n"
		"Exit status: 0, 1 a run failed or differed, 2 usage.\n", opts };

	snprintf(about, sizeof(about),
		 "Real programs under glibc's malloc, jemalloc, mimalloc and mpkit's drop-in\n"
		 "allocator (sealed: metadata closed between calls; open), interleaved in\n"
		 "rounds, every output compared with glibc's.  Wall time (median) and peak\n"
		 "RSS (wait4's ru_maxrss: the largest process of a run, children waited for\n"
		 "included) with ratios to glibc, their geometric means, and mpkit's targets\n"
		 "(speed >= %.2f, none below %.2f; RSS <= %.2f of glibc's).\n", SPEED_MIN, SPEED_FLOOR, RSS_MAX);
	snprintf(names, sizeof(names), "comma-separated names, or real (the programs:\n");
	for (int own = 0; own < 2; own++) {
		for (int w = 0, k = 0; w < mb_nworks; w++)
			if (mb_works[w].own == own)
				snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", k++ ? "," : "",
					 mb_works[w].name);
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s",
			 own ? ")\n(default: all)" : "),\nown (its own workloads: ");
	}
	for (int w = 0; w < mb_nworks; w++)
		wnames[w + 2] = mb_works[w].name;
	for (int a = 1; a < A_COUNT; a++)
		anames[a - 1] = al[a].key;
	*o = (struct opts){ .rounds = 0, .timeout = 0 };
	int rc = bench_options(&cli, argc, argv);
	if (rc >= 0)
		return rc;
	if (!list_ok(o->workloads, wnames, mb_nworks + 2, "--workloads") ||
	    !list_ok(o->allocators, anames, A_COUNT - 1, "--allocators"))
		return 2;
	if (!o->rounds)
		o->rounds = o->smoke ? 1 : 5;
	if (!(o->timeout > 0))
		o->timeout = o->smoke ? 120 : 600;
	return -1;
}

/* The environment of a run: ours without what would change the
 * allocator or the output (LD_PRELOAD, MPKIT_HEAP_META, the locale), with
 * the workload's and the allocator's added.  Freed by the caller. */
static char **run_env(const struct mb_work *w, const struct alloc *a)
{
	static const char *const drop[] = { "LD_PRELOAD=", "MPKIT_HEAP_META=", "MPKIT_MALLOC_STATS=", "LC_ALL=",
					     "LANG=", "LANGUAGE=", "PYTHONMALLOC=", "PYTHONHASHSEED=" };
	size_t n = 0, j = 0;
	while (environ[n])
		n++;
	char **e = calloc(n + 24, sizeof(char *));
	static char pre[PATH_MAX + 16], meta[64];
	if (!e)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		int keep = 1;
		for (size_t k = 0; k < sizeof(drop) / sizeof(drop[0]) && keep; k++)
			keep = strncmp(environ[i], drop[k], strlen(drop[k]));
		if (keep)
			e[j++] = environ[i];
	}
	e[j++] = "LC_ALL=C";
	for (int k = 0; w && w->env && w->env[k] && k < 16; k++)
		e[j++] = (char *)w->env[k];
	if (a->lib) {
		snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", a->path[0] ? a->path : a->lib);
		e[j++] = pre;
	}
	if (a->meta) {
		snprintf(meta, sizeof(meta), "MPKIT_HEAP_META=%s", a->meta);
		e[j++] = meta;
	}
	e[j] = NULL;
	return e;
}

/* ---- what is there ---- */

/* Loads allocator a into cat reading its own maps: present, and where
 * the dynamic linker found it; or why not. */
static void probe_alloc(struct alloc *a, const char *cat, const char *tmp)
{
	char dir[PATH_MAX + 16], maps[PATH_MAX + 32], line[PATH_MAX + 256];
	struct mb_run r;

	snprintf(dir, sizeof(dir), "%s/probe", tmp);
	snprintf(maps, sizeof(maps), "%s/maps", dir);
	const struct mb_step st = { "cat /proc/self/maps", { "cat", "/proc/self/maps" }, NULL, maps };
	const struct mb_work w = { "probe", "cat", "", NULL, NULL, &st, 1, { NULL } };
	char **env = run_env(NULL, a);
	if ((mkdir(dir, 0755) && errno != EEXIST) || !env) {
		snprintf(a->why, sizeof(a->why), "cannot make %.300s: %s", dir, strerror(errno));
		free(env);
		return;
	}
	mb_run(&w, cat, dir, env, 30, &r);
	free(env);
	FILE *f = r.failed ? NULL : fopen(maps, "r");
	const char *base = strrchr(a->lib, '/') ? strrchr(a->lib, '/') + 1 : a->lib;
	while (f && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');
		if (p && strstr(p, base)) {
			p[strcspn(p, "\n")] = 0;
			snprintf(a->path, sizeof(a->path), "%s", p);
			a->on = 1;
			break;
		}
	}
	if (f)
		fclose(f);
	/* ld.so's line ("ERROR: ld.so: object ... cannot be preloaded (cannot
	 * open shared object file): ignored.") told as what it means here: an
	 * allocator that is not installed is a column left out, no error. */
	const char *ld = r.failed ? strstr(r.why, "cannot be preloaded (") : NULL;
	if (!a->on && ld) {
		ld += strlen("cannot be preloaded (");
		int n = (int)strcspn(ld, ")");
		snprintf(a->why, sizeof(a->why), "%.300s: %.*s", a->lib, n < 80 ? n : 80, ld);
	} else if (!a->on) {
		snprintf(a->why, sizeof(a->why), "%.390s", r.failed ? r.why : "not loaded into a program");
	}
	mb_rmtree(dir);
}

static void find_allocators(struct state *st)
{
	char cat[PATH_MAX], lib[PATH_MAX + 32];
	const char *env = getenv("MPKIT_MALLOC_LIB");

	al[A_GLIBC].on = 1;
	/* The drop-in: where `mpkit run` finds it, beside the benchmarks in
	 * the build tree and in the installed helpers' directory. */
	if (env && *env)
		snprintf(lib, sizeof(lib), "%s", env);
	else
		bench_beside_me("libmpkit-malloc.so", lib, sizeof(lib));
	if (bench_find_on_path("cat", cat, sizeof(cat), NULL))
		snprintf(cat, sizeof(cat), "/bin/cat");
	for (int a = 1; a < A_COUNT; a++) {
		if (!listed(st->o.allocators, al[a].key)) {
			snprintf(al[a].why, sizeof(al[a].why), "not asked for (--allocators)");
			continue;
		}
		if (al[a].meta) {
			/* what `mpkit run` checks first: the drop-in would
			 * fall back to its internal allocator */
			if (mpk_init()) {
				snprintf(al[a].why, sizeof(al[a].why), "mpkit cannot start: %s (mpkit info says why)",
					 strerror(errno));
				continue;
			}
			/* Sealed on soft opens with mprotect() on every call (a
			 * debugging mode there): minutes a program, so only asked. */
			if (a == A_SEALED && !st->o.allocators && !st->o.count && mpk_backend() == MPK_BACKEND_SOFT) {
				snprintf(al[a].why, sizeof(al[a].why),
					 "soft backend, where sealed is a debugging mode (4 mprotect() a malloc+free pair); "
					 "--allocators sealed runs it");
				continue;
			}
			if (access(lib, R_OK)) {
				snprintf(al[a].why, sizeof(al[a].why), "%.300s: %s", lib, strerror(errno));
				continue;
			}
			al[a].lib = lib;
		}
		probe_alloc(&al[a], cat, st->tmp);
		if (!al[a].on && !al[a].meta)
			snprintf(al[a].why + strlen(al[a].why), sizeof(al[a].why) - strlen(al[a].why),
				 "; install %s for its column", a == A_JEMALLOC ? "libjemalloc2" : "libmimalloc2.0");
	}
}

static void find_workloads(struct state *st)
{
	char any[PATH_MAX];

	for (int w = 0; w < mb_nworks; w++) {
		const struct mb_work *k = &mb_works[w];
		if (!work_listed(st->o.workloads, w))
			continue;
		if (k->own) {
			bench_beside_me(k->prog, st->prog[w], sizeof(st->prog[w]));
			if (!access(st->prog[w], X_OK))
				st->on[w] = 1;
			else
				printf("skipped %s: %s: %s (make benchmarks builds it)\n", k->name, st->prog[w],
				       strerror(errno));
		} else if (!bench_find_on_path(k->prog, st->prog[w], sizeof(st->prog[w]), bench_not_script)) {
			st->on[w] = 1;
		} else if (!bench_find_on_path(k->prog, any, sizeof(any), NULL)) {
			printf("skipped %s: %s on PATH is a script, and no program of that name is behind it\n",
			       k->name, any);
		} else {
			printf("skipped %s: %s not found on PATH (this benchmark installs nothing)\n", k->name,
			       k->prog);
		}
	}
}

/* ---- the runs ---- */

static void work_dir(const struct state *st, int w, char *dir, size_t len)
{
	snprintf(dir, len, "%s/%s", st->tmp, mb_works[w].name);
}

/* The inputs, untimed; a workload whose inputs cannot be written fails in
 * every cell. */
static int setup(struct state *st, int w)
{
	char dir[PATH_MAX + 64];

	work_dir(st, w, dir, sizeof(dir));
	if (mkdir(dir, 0755) || mb_works[w].setup(dir, st->o.smoke)) {
		fprintf(stderr, "%s: %s: cannot write the inputs in %s: %s\n", me, mb_works[w].name, dir, strerror(errno));
		return -1;
	}
	return 0;
}

static void one(struct state *st, int w, int a, struct mb_run *r)
{
	char dir[PATH_MAX + 64];
	char **env = run_env(&mb_works[w], &al[a]);
	struct mb_work work = mb_works[w];

	if (st->o.smoke && work.smoke)
		work.steps = work.smoke;
	work_dir(st, w, dir, sizeof(dir));
	if (!env) {
		memset(r, 0, sizeof(*r));
		r->failed = 1;
		snprintf(r->why, sizeof(r->why), "out of memory");
		return;
	}
	mb_run(&work, st->prog[w], dir, env, st->o.timeout, r);
	free(env);
}

static void run_all(struct state *st, struct mb_run *ref, int *has_ref)
{
	int order[A_COUNT], na = 0, nw = 0, done = 0;

	for (int a = 0; a < A_COUNT; a++)
		if (al[a].on)
			order[na++] = a;
	for (int w = 0; w < mb_nworks; w++)
		nw += st->on[w];
	/* A first glibc run of each workload, not counted: the page cache
	 * holds the programs and the inputs before the first timed run. */
	for (int w = 0; w < mb_nworks && !st->o.smoke && !bench_stop; w++) {
		if (!st->on[w])
			continue;
		bench_progress("warm-up: %s under glibc", mb_works[w].name);
		one(st, w, A_GLIBC, &ref[w]);
		has_ref[w] = !ref[w].failed;
	}
	for (int r = 0; r < st->o.rounds; r++)
		for (int w = 0; w < mb_nworks; w++) {
			for (int i = 0; i < na && st->on[w] && !bench_stop; i++) {
				int a = order[(i + r + w) % na];
				struct mb_run *run = &st->cell[w][a].run[r];
				bench_progress("[%d/%d] round %d, %s, %s", ++done, nw * na * st->o.rounds, r + 1,
					       mb_works[w].name, al[a].name);
				one(st, w, a, run);
			}
		}
	bench_progress_done();
}

/* Each cell: failed (a run failed, or printed or wrote other than
 * glibc's), or its medians. */
static int judge(struct state *st, struct mb_run *ref, int *has_ref)
{
	int bad = 0;

	for (int w = 0; w < mb_nworks; w++) {
		if (!st->on[w])
			continue;
		for (int r = 0; r < st->o.rounds && !has_ref[w]; r++) /* smoke: no warm-up */
			if (!st->cell[w][A_GLIBC].run[r].failed) {
				ref[w] = st->cell[w][A_GLIBC].run[r];
				has_ref[w] = 1;
			}
		for (int a = 0; a < A_COUNT; a++) {
			struct cell *c = &st->cell[w][a];
			double secs[MAX_ROUNDS], rss[MAX_ROUNDS];
			if (!al[a].on)
				continue;
			for (int r = 0; r < st->o.rounds && !c->failed; r++) {
				const struct mb_run *run = &c->run[r];
				int p = 0;
				if (run->failed) {
					c->failed = 1;
					c->why = run->why;
					break;
				}
				if (!has_ref[w]) {
					c->failed = 1;
					c->why = "no glibc run to compare with";
					break;
				}
				while (p < run->nparts && p < ref[w].nparts && run->part[p] == ref[w].part[p])
					p++;
				if (p < run->nparts || p < ref[w].nparts) {
					snprintf(st->mismatch[w][a], sizeof(st->mismatch[w][a]),
						 "round %d: the output of %s differs from glibc's", r + 1,
						 mb_part_name(&mb_works[w], p));
					c->failed = 1;
					c->why = st->mismatch[w][a];
				}
				secs[r] = run->secs;
				rss[r] = (double)run->maxrss_kib;
			}
			bad |= c->failed;
			if (!c->failed) {
				c->secs = median(secs, st->o.rounds);
				c->rss_kib = median(rss, st->o.rounds);
			}
		}
	}
	return bad;
}

/* ---- the table ---- */


/* glibc's time / a's (speed), a's peak / glibc's: 0 when a cell failed. */
static double ratio(const struct state *st, int w, int a, int rss)
{
	const struct cell *c = &st->cell[w][a], *g = &st->cell[w][A_GLIBC];

	if (c->failed || g->failed || !(c->secs > 0) || !(g->secs > 0) || !(c->rss_kib > 0) || !(g->rss_kib > 0))
		return 0;
	return rss ? c->rss_kib / g->rss_kib : g->secs / c->secs;
}

/* The geometric mean of a's ratios over the workloads that ran; *n of
 * them had one. */
static double geomean(const struct state *st, int a, int rss, int *n)
{
	double sum = 0;

	*n = 0;
	for (int w = 0; w < mb_nworks; w++) {
		double x = st->on[w] ? ratio(st, w, a, rss) : 0;
		if (x > 0) {
			sum += log(x);
			++*n;
		}
	}
	return *n ? exp(sum / *n) : 0;
}

/* The failed cells' numbers, in the order of the tables' rows. */
static int note_of(const struct state *st, int w, int a)
{
	int n = 0;

	for (int v = 0; v < mb_nworks; v++)
		for (int b = 0; b < A_COUNT; b++)
			if (st->on[v] && al[b].on && st->cell[v][b].failed && (v < w || (v == w && b <= a)))
				n++;
	return n;
}

/* 1 when a geometric mean left a workload out. */
static int print_rows(const struct state *st, int rss)
{
	char cell[64];
	int nw = 0, n, fewer = 0;

	printf("  %-8s", "workload");
	for (int a = 0; a < A_COUNT; a++)
		if (al[a].on)
			printf(" %17s", al[a].name);
	printf("\n");
	for (int w = 0; w < mb_nworks; w++) {
		if (!st->on[w])
			continue;
		nw++;
		printf("  %-8s", mb_works[w].name);
		for (int a = 0; a < A_COUNT; a++) {
			const struct cell *c = &st->cell[w][a];
			double x = ratio(st, w, a, rss);
			if (!al[a].on)
				continue;
			if (c->failed)
				snprintf(cell, sizeof(cell), "ERROR [%d]", note_of(st, w, a));
			else if (rss)
				snprintf(cell, sizeof(cell), "%.1f", c->rss_kib / 1024);
			else
				snprintf(cell, sizeof(cell), "%.3f s", c->secs);
			if (a != A_GLIBC && x > 0)
				snprintf(cell + strlen(cell), sizeof(cell) - strlen(cell), " %5.2fx", x);
			printf(" %17s", cell);
		}
		printf("\n");
	}
	printf("  %-8s %17s", "geomean", "");
	for (int a = 1; a < A_COUNT; a++) {
		if (!al[a].on)
			continue;
		double g = geomean(st, a, rss, &n);
		if (!n)
			snprintf(cell, sizeof(cell), "-");
		else
			snprintf(cell, sizeof(cell), "%.2fx%s", g, n < nw ? "*" : "");
		fewer |= n < nw;
		printf(" %17s", cell);
	}
	printf("\n");
	return fewer;
}

/* Each mpkit column against the targets, every miss named. */
static void print_targets(const struct state *st)
{
	if (st->o.smoke) {
		printf("\ntargets: not judged (a smoke run: its timings mean nothing)\n");
		return;
	}
	printf("\ntargets: speed geomean >= %.2f and no workload below %.2f; peak RSS geomean <= %.2f\n",
	       SPEED_MIN, SPEED_FLOOR, RSS_MAX);
	for (int a = A_SEALED; a <= A_OPEN; a++) {
		int n, m;
		if (!al[a].on)
			continue;
		double sp = geomean(st, a, 0, &n), rs = geomean(st, a, 1, &m);
		if (!n || !m) {
			printf("  %-13s no figures (every cell failed)\n", al[a].name);
			continue;
		}
		printf("  %-13s speed %.2f: %s", al[a].name, sp, sp >= SPEED_MIN ? "met" : "MISSED");
		int k = 0;
		for (int w = 0; w < mb_nworks; w++) {
			double x = st->on[w] ? ratio(st, w, a, 0) : 0;
			if (x > 0 && x < SPEED_FLOOR)
				printf("%s%s %.2f", k++ ? ", " : "; below 0.85: ", mb_works[w].name, x);
		}
		printf("\n  %-13s peak RSS %.2f: %s", "", rs, rs <= RSS_MAX ? "met" : "MISSED");
		k = 0;
		for (int w = 0; w < mb_nworks; w++) {
			double x = st->on[w] ? ratio(st, w, a, 1) : 0;
			if (x > RSS_MAX)
				printf("%s%s %.2f", k++ ? ", " : "; above 1.10: ", mb_works[w].name, x);
		}
		printf("\n");
	}
}

static void load(char *buf, size_t len)
{
	FILE *f = fopen("/proc/loadavg", "r");

	if (!f || !fgets(buf, (int)len, f))
		snprintf(buf, len, "unknown\n");
	buf[strcspn(buf, "\n")] = 0;
	if (f)
		fclose(f);
}

static void print_header(const struct state *st, const char *load0)
{
	char load1[128];
	int be = mpk_backend(), nw = 0;

	load(load1, sizeof(load1));
	for (int w = 0; w < mb_nworks; w++)
		nw += st->on[w];
	printf("mpkit bench malloc: %d workload%s, %d round%s interleaved, mpkit %s, backend %s, %ld CPUs\n", nw,
	       nw == 1 ? "" : "s", st->o.rounds, st->o.rounds == 1 ? "" : "s", mpk_version(),
	       be < 0 ? "none" : mpk_backend_name(be), sysconf(_SC_NPROCESSORS_ONLN));
	printf("load average before: %s; after: %s\n", load0, load1);
	if (st->o.smoke)
		printf("SMOKE RUN: small inputs, one round: the timings mean nothing\n");
	printf("workloads:\n");
	for (int w = 0; w < mb_nworks; w++)
		if (st->on[w])
			printf("  %-8s %s (%s)\n", mb_works[w].name, mb_works[w].what, st->prog[w]);
	printf("allocators:\n");
	for (int a = 0; a < A_COUNT; a++) {
		if (!al[a].on)
			printf("  %-13s left out: %s\n", al[a].name, al[a].why);
		else if (!al[a].lib)
			printf("  %-13s the C library's malloc, the reference\n", al[a].name);
		else
			printf("  %-13s %s%s%s\n", al[a].name, al[a].path, al[a].meta ? ", MPKIT_HEAP_META=" : "",
			       al[a].meta ? al[a].meta : "");
	}
	if (be == MPK_BACKEND_SOFT && al[A_SEALED].on)
		printf("  (soft backend: sealed opens the metadata with 2 mprotect() calls per open)\n");
}

static void print_table(const struct state *st)
{
	int fewer;

	printf("\nwall time, median of %d: seconds, and glibc's time / this (speed: higher is faster)\n",
	       st->o.rounds);
	fewer = print_rows(st, 0);
	printf("\npeak RSS, median of %d: MiB (wait4's ru_maxrss, the largest single process of a run,\n"
	       "children it waited for included), and this / glibc's (lower is smaller)\n", st->o.rounds);
	fewer |= print_rows(st, 1);
	if (fewer)
		printf("(* a geometric mean over fewer workloads: a cell failed)\n");
	print_targets(st);
	for (int w = 0; w < mb_nworks; w++)
		for (int a = 0; a < A_COUNT; a++)
			if (st->on[w] && al[a].on && st->cell[w][a].failed)
				printf("%s  [%d] %s, %s: %s\n", note_of(st, w, a) == 1 ? "\nerrors:\n" : "",
				       note_of(st, w, a), mb_works[w].name, al[a].name, st->cell[w][a].why);
}

/* ---- the plot ---- */

static void plot_cols(FILE *f, const char *dat, int first)
{
	static const char *const color[A_COUNT] = { "", "#1b9e77", "#7570b3", "#d95f02", "#e7298a" };
	int col = first, k = 0;

	fprintf(f, "plot ");
	for (int a = 1; a < A_COUNT; a++) {
		if (!al[a].on)
			continue;
		fprintf(f, "%s", k++ ? ", \\\n     " : "");
		bench_gnuplot_quote(f, k == 1 ? dat : "");
		fprintf(f, " using %d:xtic(1) title '%s' lc rgb '%s'", col++, al[a].name, color[a]);
	}
	fprintf(f, "\n");
}

static int plot_input(const char *dat, const char *gp, const void *arg)
{
	const struct state *st = arg;
	FILE *d = fopen(dat, "w"), *f;
	int n, na = 0;

	if (!d)
		return -1;
	for (int w = 0; w <= mb_nworks; w++) {
		if (w < mb_nworks && !st->on[w])
			continue;
		fprintf(d, "%s", w < mb_nworks ? mb_works[w].name : "geomean");
		for (int rss = 0; rss < 2; rss++)
			for (int a = 1; a < A_COUNT; a++) {
				double x = !al[a].on ? 0 : w < mb_nworks ? ratio(st, w, a, rss) : geomean(st, a, rss, &n);
				if (al[a].on)
					fprintf(d, x > 0 ? " %.4f" : " NaN", x);
			}
		fprintf(d, "\n");
	}
	if (fclose(d) || !(f = fopen(gp, "w")))
		return -1;
	for (int a = 1; a < A_COUNT; a++)
		na += al[a].on;
	fprintf(f, "set terminal svg size 1000,760 fixed enhanced font 'DejaVu Sans,12' background '#ffffff'\n"
		   "set output\nset encoding utf8\n"
		   "set multiplot layout 2,1 title '{/:Bold mpkit bench malloc: real programs, ratios to glibc (median of %d%s)}'\n"
		   "set style data histograms\nset style histogram clustered gap 1\n"
		   "set style fill solid 0.85 border -1\nset grid ytics\nset yrange [0:*]\n"
		   "set key outside right top noenhanced\nset xtics noenhanced\n",
		st->o.rounds, st->o.smoke ? "; SMOKE RUN: timings mean nothing" : "");
	fprintf(f, "set ylabel 'speed: glibc time / time'\n"
		   "set arrow 1 from graph 0, first %.2f to graph 1, first %.2f nohead lc rgb '#cc0000' dt 2\n",
		SPEED_MIN, SPEED_MIN);
	plot_cols(f, dat, 2);
	fprintf(f, "set ylabel 'peak RSS / glibc peak RSS'\n"
		   "set arrow 1 from graph 0, first %.2f to graph 1, first %.2f nohead lc rgb '#cc0000' dt 2\n",
		RSS_MAX, RSS_MAX);
	plot_cols(f, dat, 2 + na);
	fprintf(f, "unset multiplot\n");
	return fclose(f);
}

static void draw(const struct state *st)
{
	struct bench_gnuplot g;
	char why[2048];

	if (bench_gnuplot_find(&g)) {
		printf("\nplot: not drawn: %s (Debian: gnuplot-nox)\n", g.why);
		return;
	}
	switch (bench_gnuplot_draw(st->o.plot, &g, plot_input, st, why, sizeof(why))) {
	case 0:
		printf("\nplot: %s, drawn with %s\n", st->o.plot, g.version);
		break;
	case -2:
		printf("\nplot: writing %s: %s\n", st->o.plot, strerror(errno));
		break;
	default:
		printf("\nplot: not drawn: %s\n", why);
	}
}

/* ---- --count: the fast path's instructions ---- */

static const long count_size[] = { 32, 256 };
#define NSIZES 2

/* Every allocator's pair counted and printed: 0, or 1 when one could
 * not be counted. */
static int count_all(const struct state *st)
{
	char prog[PATH_MAX];
	static struct mb_count c[A_COUNT][NSIZES];
	long few = st->o.smoke ? 5 : 20, many = st->o.smoke ? 25 : 220;
	int bad = 0, be = mpk_backend();

	bench_beside_me("mpkit-bench-mw-count", prog, sizeof(prog));
	if (access(prog, X_OK)) {
		fprintf(stderr, "%s: %s: %s (make benchmarks builds it)\n", me, prog, strerror(errno));
		return 1;
	}
	for (int a = 0; a < A_COUNT && !bench_stop; a++)
		for (int i = 0; i < NSIZES && al[a].on && !bench_stop; i++) {
			char **env = run_env(NULL, &al[a]);
			bench_progress("counting: %s, %ld bytes", al[a].name, count_size[i]);
			if (!env || mb_count(prog, env, count_size[i], few, many, &c[a][i])) {
				if (!env)
					snprintf(c[a][i].why, sizeof(c[a][i].why), "out of memory");
				bad = 1;
			}
			free(env);
		}
	bench_progress_done();
	if (bench_stop)
		return 0;
	printf("mpkit bench malloc --count: instructions per malloc+free pair of a cached block,\n"
	       "mpkit %s, backend %s%s\n", mpk_version(), be < 0 ? "none" : mpk_backend_name(be),
	       st->o.smoke ? " (SMOKE RUN: few pairs)" : "");
	printf("single-stepped (ptrace): the steps outside the loop's own code, for %ld pairs less\n"
	       "those for %ld, divided by %ld; 1,000 pairs first put the block in the cache\n\n",
	       many, few, many - few);
	printf("  %-13s %9s %9s %9s %9s\n", "allocator", "32 B", "256 B", "syscalls", "wrpkru");
	for (int a = 0; a < A_COUNT; a++) {
		if (!al[a].on) {
			printf("  %-13s left out: %s\n", al[a].name, al[a].why);
			continue;
		}
		printf("  %-13s", al[a].name);
		for (int i = 0; i < NSIZES; i++)
			if (c[a][i].why[0])
				printf(" %9s", "ERROR");
			else
				printf(" %9.1f", c[a][i].insns);
		if (!c[a][0].why[0])
			printf(" %9.2f %9.2f", c[a][0].syscalls, c[a][0].wrpkru);
		printf("\n");
		for (int m = 0; m < c[a][0].nmod; m++)
			printf("%s%s %.1f", m ? ", " : "    32 B in: ", c[a][0].mod[m], c[a][0].modn[m]);
		printf(c[a][0].nmod ? "\n" : "");
		for (int i = 0; i < NSIZES; i++)
			if (c[a][i].why[0])
				printf("    %ld bytes: %s\n", count_size[i], c[a][i].why);
	}
	printf("(syscalls, wrpkru: per pair of 32 bytes; a system call is one step here, its\n"
	       "cost the kernel's; \"in\": the files those 32-byte pairs' instructions ran in)\n");
	return bad;
}

/* ---- main ---- */

static struct state st;
static struct mb_run ref[MB_MAX_WORKS];

int main(int argc, char **argv)
{
	int has_ref[MB_MAX_WORKS] = { 0 }, nw = 0;
	char load0[128];
	const char *tmp = getenv("TMPDIR");

	me = bench_prog(argv[0], "malloc");
	int rc = parse(argc, argv, &st.o);
	if (rc >= 0)
		return rc;
	bench_catch_stop();
	bench_progress_start(st.o.quiet);
	load(load0, sizeof(load0));
	snprintf(st.tmp, sizeof(st.tmp), "%s/mpkit-bench-malloc.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(st.tmp)) {
		fprintf(stderr, "%s: cannot make a directory in %s: %s\n", me, tmp && *tmp ? tmp : "/tmp", strerror(errno));
		return 1;
	}
	if (st.o.count) {
		find_allocators(&st);
		int bad = count_all(&st);
		if (mb_rmtree(st.tmp))
			fprintf(stderr, "%s: cannot remove %s: %s\n", me, st.tmp, strerror(errno));
		if (bench_stop)
			return 128 + bench_stop;
		return bench_output_ok(me) ? bad : 1;
	}
	find_workloads(&st);
	find_allocators(&st);
	for (int w = 0; w < mb_nworks && !bench_stop; w++)
		if (st.on[w] && setup(&st, w))
			st.on[w] = 0, nw = -1000;
	for (int w = 0; w < mb_nworks; w++)
		nw += st.on[w];
	int bad = nw < 0;
	if (nw > 0 && !bench_stop)
		run_all(&st, ref, has_ref);
	if (bench_stop) {
		/* what ran is killed and reaped (malloc_run.c): the files go */
		fprintf(stderr, "%s: stopped by signal %d; removing %s\n", me, (int)bench_stop, st.tmp);
		if (mb_rmtree(st.tmp))
			fprintf(stderr, "%s: cannot remove %s: %s\n", me, st.tmp, strerror(errno));
		return 128 + bench_stop;
	}
	if (nw > 0) {
		bad |= judge(&st, ref, has_ref);
		print_header(&st, load0);
		print_table(&st);
		if (st.o.plot)
			draw(&st);
	} else if (!nw) {
		printf("nothing to run: no workload's program is here\n");
	}
	if (mb_rmtree(st.tmp))
		fprintf(stderr, "%s: cannot remove %s: %s\n", me, st.tmp, strerror(errno));
	return bench_output_ok(me) ? bad : 1;
}
