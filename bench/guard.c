/* SPDX-License-Identifier: MIT */
/*
 * mpkit-bench-guard (`mpkit bench guard`): Debian's programs with one of
 * their libraries guarded (libmpkit-guard.so preloaded with the
 * variables `mpkit guard --lib LIB` sets, docs/guard.md) against the
 * same programs unguarded: sqlite3 (libsqlite3), xmllint (libxml2), git
 * (libz), openssl (libcrypto), python3 with import sqlite3 (libsqlite3)
 * and import bz2 (libbz2), both brought by dlopen().  Rounds interleave,
 * the order turned from round to round; every guarded run's output is
 * compared with the unguarded one's, and each guarded run must have
 * written its counts (MPKIT_GUARD_STATS, tools/guard_stats.c): the calls
 * through the gate, and those from outside, which opened the domain.  A
 * difference, a failure, a library left unguarded is an error in that
 * cell (exit status 1), never a figure.  The workloads' runs, timing and
 * hashing are mpkit bench malloc's (malloc_run.c); sqlite3's and git's
 * inputs are its too (malloc_work.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <math.h>
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

#define MAX_ROUNDS 100

/* ---- the workloads ---- */

static int setup_xml(const char *dir, int smoke)
{
	char path[4096];
	int n = smoke ? 2000 : 60000;

	snprintf(path, sizeof(path), "%s/x.xml", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "<?xml version=\"1.0\"?>\n<r a=\"1\">");
	for (int i = 1; i <= n; i++)
		fprintf(f, "<i n=\"%d\"><j>v%d</j><k t=\"%d\">%s</k></i>", i, i, i % 7, i % 3 ? "text" : "more &amp; text");
	fprintf(f, "</r>\n");
	int bad = ferror(f);
	return fclose(f) || bad ? -1 : 0;
}

static const struct mb_step xml_steps[] = {
	{ "xmllint --format", { "xmllint", "--format", "../x.xml" }, NULL, NULL },
	{ "xmllint --xpath", { "xmllint", "--xpath", "count(//j) + sum(//k/@t)", "../x.xml" }, NULL, NULL },
};

static int setup_openssl(const char *dir, int smoke)
{
	return mb_write_text(dir, "in.txt", smoke ? 20000 : 300000, 0x2545f4914f6cdd1dull);
}

#define ENC "enc", "-aes-256-cbc", "-pbkdf2", "-pass", "pass:x", "-S", "0102030405060708"
static const struct mb_step openssl_steps[] = {
	{ "openssl dgst -sha256", { "openssl", "dgst", "-sha256", "-r", "../in.txt" }, NULL, NULL },
	{ "openssl enc", { "openssl", ENC, "-in", "../in.txt", "-out", "in.enc" }, NULL, NULL },
	{ "openssl enc -d", { "openssl", ENC, "-d", "-in", "in.enc" }, NULL, NULL },
};

/* Rows inserted one by one through the module: several calls into the
 * library a row (bind, step, reset), a chatty library's pattern. */
static int setup_pysqlite(const char *dir, int smoke)
{
	return mb_write_script(dir, "w.py", "import sqlite3\n"
		   "n = %d\n"
		   "c = sqlite3.connect(':memory:')\n"
		   "c.execute('create table t(a integer, b text)')\n"
		   "c.executemany('insert into t values (?, ?)', ((i, str(i) * 3) for i in range(n)))\n"
		   "print(c.execute('select count(*), sum(a), max(b) from t').fetchone())\n"
		   "print(sum(1 for r in c.execute('select a, b from t where a %% 3 = 0')))\n",
		smoke ? 2000 : 100000);
}

/* Compressed in 1 KiB pieces (a call each), then in one call. */
static int setup_pybz2(const char *dir, int smoke)
{
	return mb_write_script(dir, "w.py", "import bz2, hashlib\n"
		   "d = b''.join(str(i).encode() for i in range(%d))\n"
		   "c = bz2.BZ2Compressor()\n"
		   "z = b''.join([c.compress(d[i:i + 1024]) for i in range(0, len(d), 1024)] + [c.flush()])\n"
		   "y = bz2.compress(d)\n"
		   "print(len(d), len(z), hashlib.sha256(z).hexdigest(), bz2.decompress(z) == d, y == z)\n",
		smoke ? 20000 : 600000);
}

static const struct mb_step py_steps[] = {
	{ "python3 w.py", { "python3", "../w.py" }, NULL, NULL },
};

#define STEPS(s) s, (int)(sizeof(s) / sizeof(s[0]))

struct gwork {
	const char *lib;    /* MPKIT_GUARD_LIB */
	const char *heap;   /* MPKIT_GUARD_LIB under --heap, where it needs words */
	const char *borrow; /* mpkit bench malloc's workload of that name, else w */
	struct mb_work w;
};

static const struct gwork works[] = {
	{ "libsqlite3", NULL, "sqlite", { "sqlite" } },
	/* xmllint writes the context xmlXPathNewContext() allocates for it
	 * (docs/guard.md, "Heap blocks"): the program's. */
	{ "libxml2", "libxml2,heap,out=xmlXPathNewContext", NULL, { "xmllint", "xmllint", "xmllint: a document of 60,000 elements formatted, an XPath sum", NULL,
			     setup_xml, STEPS(xml_steps), { NULL } } },
	{ "libz", NULL, "git", { "git" } },
	{ "libcrypto", NULL, NULL, { "openssl", "openssl", "openssl: sha256 and an AES-256-CBC round trip of 300,000 lines (10 MB)",
			       NULL, setup_openssl, STEPS(openssl_steps), { "in.enc", NULL } } },
	{ "libsqlite3", NULL, NULL, { "py-sqlite", "python3", "python3, import sqlite3: 100,000 rows inserted one by one, queried",
				NULL, setup_pysqlite, STEPS(py_steps), { NULL } } },
	{ "libbz2", NULL, NULL, { "py-bz2", "python3", "python3, import bz2: 3.3 MB compressed in 1 KiB pieces and whole",
			    NULL, setup_pybz2, STEPS(py_steps), { NULL } } },
};
#define NW (int)(sizeof(works) / sizeof(works[0]))

/* ---- the variants: unguarded, guarded on hw, guarded on soft ---- */

enum { V_PLAIN, V_HW, V_SOFT, V_COUNT };

struct variant {
	const char *name;    /* in the table */
	const char *backend; /* MPKIT_BACKEND for the helper */
	int on;
	char why[200];       /* why it is left out */
};

static struct variant va[V_COUNT] = {
	{ "unguarded", NULL, 1 },
	{ "hw", "hw" },
	{ "soft", "soft" },
};

struct opts {
	int rounds, smoke, quiet, heap;
	double timeout;
	const char *workloads;
};

struct grun {
	struct mb_run r;
	double calls, opens; /* summed over its processes' lines */
	int procs;           /* lines written: processes that guarded the library */
};

struct cell {
	struct grun run[MAX_ROUNDS];
	int failed;
	char why[700];
	double secs, calls, opens; /* medians */
	int procs;
};

struct state {
	struct opts o;
	char tmp[PATH_MAX], helper[PATH_MAX];
	int on[NW];
	struct mb_work w[NW];       /* each workload, its borrowed parts filled in */
	char prog[NW][PATH_MAX];
	struct cell cell[NW][V_COUNT];
};

static const char *me = "mpkit-bench-guard";

static int listed(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; p && *p;) {
		size_t k = strcspn(p, ",");
		if (k == n && !strncmp(p, name, n))
			return 1;
		p += k + (p[k] == ',');
	}
	return !list;
}

static int parse(int argc, char **argv, struct opts *o)
{
	char names[256] = "comma-separated, of: ";
	const struct bench_opt opts[] = {
		{ "reps", 0, BO_INT, &o->rounds, "N", "rounds, each figure their median (default 5; --smoke: 1)", 1,
		  MAX_ROUNDS },
		{ "smoke", 0, BO_FLAG, &o->smoke, NULL, "small inputs, one round: a correctness run (the timings\n"
		  "mean nothing)" },
		{ "workloads", 0, BO_STR, &o->workloads, "LIST", names },
		{ "timeout", 0, BO_NUM, &o->timeout, "S", "a step still running after S seconds fails its\n"
		  "cell (default 600; --smoke: 120)", 1e-3, 1e6 },
		{ "heap", 0, BO_FLAG, &o->heap, NULL, "guard the library's heap blocks too (mpkit guard --heap)" },
		{ "quiet", 'q', BO_FLAG, &o->quiet, NULL, "no progress on stderr" },
		{ NULL, 0 },
	};
	const struct bench_cli cli = { me,
		"Real programs with one of their libraries guarded (mpkit guard --lib LIB)\n"
		"against the same programs unguarded, interleaved in rounds, every guarded\n"
		"output compared with the unguarded one.  Wall time (median), the ratio, the\n"
		"calls through the gate (MPKIT_GUARD_STATS: all, and those from outside,\n"
		"which change rights) and calls per second, on each backend there is\n"
		"(hw: protection keys, 2 WRPKRU a call from outside; soft: 2 mprotect()).\n",
		"Programs come from PATH (a script such as pyenv's shim is passed over for\n"
		"the program behind it); the helper from MPKIT_GUARD_HELPER, else\n"
		"libmpkit-guard.so beside this program.  Ctrl-C stops the run (exit 130).\n"
		"Exit status: 0, 1 a run failed, differed or was not guarded, 2 usage.\n", opts };

	for (int w = 0; w < NW; w++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", w ? "," : "", works[w].w.name);
	snprintf(names + strlen(names), sizeof(names) - strlen(names), "\n(default: all)");
	*o = (struct opts){ 0 };
	int rc = bench_options(&cli, argc, argv);
	if (rc >= 0)
		return rc;
	for (const char *p = o->workloads; p && *p;) {
		size_t k = strcspn(p, ",");
		int ok = 0;
		for (int w = 0; w < NW && !ok; w++)
			ok = strlen(works[w].w.name) == k && !strncmp(p, works[w].w.name, k);
		if (!ok) {
			fprintf(stderr, "%s: --workloads: unknown name '%.*s'\n", me, (int)k, p);
			return 2;
		}
		p += k + (p[k] == ',');
	}
	if (!o->rounds)
		o->rounds = o->smoke ? 1 : 5;
	if (!(o->timeout > 0))
		o->timeout = o->smoke ? 120 : 600;
	return -1;
}

static void stats_path(const struct state *st, int w, int v, char *p, size_t len)
{
	snprintf(p, len, "%s/%s/stats-%s", st->tmp, st->w[w].name, va[v].name);
}

/* Ours without what changes the run (a preload, mpkit's variables, the
 * locale), with the workload's and, guarded, the helper's. */
static char **run_env(const struct state *st, int w, int v)
{
	static char pre[PATH_MAX + 16], lib[64], stats[PATH_MAX + 32], be[32];
	size_t n = 0, j = 0;

	while (environ[n])
		n++;
	char **e = calloc(n + 24, sizeof(char *));
	if (!e)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11) && strncmp(environ[i], "MPKIT_", 6) &&
		    strncmp(environ[i], "LC_ALL=", 7) && strncmp(environ[i], "LANG", 4))
			e[j++] = environ[i];
	e[j++] = "LC_ALL=C";
	for (int k = 0; st->w[w].env && st->w[w].env[k] && k < 12; k++)
		e[j++] = (char *)st->w[w].env[k];
	if (v != V_PLAIN) {
		snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", st->helper);
		snprintf(lib, sizeof(lib), "MPKIT_GUARD_LIB=%s",
			 st->o.heap && works[w].heap ? works[w].heap : works[w].lib);
		snprintf(be, sizeof(be), "MPKIT_BACKEND=%s", va[v].backend);
		snprintf(stats, sizeof(stats), "MPKIT_GUARD_STATS=");
		stats_path(st, w, v, stats + strlen(stats), sizeof(stats) - strlen(stats));
		e[j++] = pre, e[j++] = lib, e[j++] = be, e[j++] = stats;
		e[j++] = "MPKIT_GUARD_DENY=write";
		if (st->o.heap)
			e[j++] = "MPKIT_GUARD_HEAP=1";
	}
	e[j] = NULL;
	return e;
}

/* The lines the run's processes wrote: summed into g; 0, or -1 with
 * why in g->r. */
static int read_stats(const char *path, int v, const char *lib, struct grun *g)
{
	char line[600], be[32];
	unsigned long calls, opens;
	FILE *f = fopen(path, "r");

	while (f && fgets(line, sizeof(line), f)) {
		const char *b = strstr(line, " backend=");
		if (sscanf(line, "mpkit-guard-stats pid=%*d lib=%*s calls=%lu opens=%lu", &calls, &opens) != 2 || !b ||
		    sscanf(b, " backend=%31s", be) != 1)
			continue;
		if (strcmp(be, va[v].backend)) {
			snprintf(g->r.why, sizeof(g->r.why), "the helper ran on the %s backend, not %s", be, va[v].backend);
			fclose(f);
			return -1;
		}
		g->calls += (double)calls, g->opens += (double)opens, g->procs++;
	}
	if (f)
		fclose(f);
	if (!g->procs)
		snprintf(g->r.why, sizeof(g->r.why),
			 "%s was not guarded: no process wrote its counts (is the helper libmpkit-guard.so?)", lib);
	return g->procs ? 0 : -1;
}

static void one(struct state *st, int w, int v, struct grun *g)
{
	char dir[PATH_MAX + 64], stats[PATH_MAX + 64];
	char **env = run_env(st, w, v);

	memset(g, 0, sizeof(*g));
	stats_path(st, w, v, stats, sizeof(stats));
	if (unlink(stats) && errno != ENOENT)
		env = (free(env), NULL);
	if (!env) {
		g->r.failed = 1;
		snprintf(g->r.why, sizeof(g->r.why), "out of memory, or %.400s stays: %s", stats, strerror(errno));
		return;
	}
	snprintf(dir, sizeof(dir), "%s/%s", st->tmp, st->w[w].name);
	mb_run(&st->w[w], st->prog[w], dir, env, st->o.timeout, &g->r);
	free(env);
	if (v != V_PLAIN && !g->r.failed && read_stats(stats, v, works[w].lib, g))
		g->r.failed = 1;
}

static void run_all(struct state *st)
{
	int order[V_COUNT], nv = 0, nw = 0, done = 0;
	struct grun warm;

	for (int v = 0; v < V_COUNT; v++)
		if (va[v].on)
			order[nv++] = v;
	for (int w = 0; w < NW; w++)
		nw += st->on[w];
	/* An untimed unguarded run first: the page cache holds the program
	 * and its inputs. */
	for (int w = 0; w < NW && !st->o.smoke && !bench_stop; w++)
		if (st->on[w]) {
			bench_progress("warm-up: %s", st->w[w].name);
			one(st, w, V_PLAIN, &warm);
		}
	for (int r = 0; r < st->o.rounds && !bench_stop; r++)
		for (int w = 0; w < NW; w++)
			for (int i = 0; i < nv && st->on[w] && !bench_stop; i++) {
				int v = order[(i + r + w) % nv];
				bench_progress("[%d/%d] round %d, %s, %s", ++done, nw * nv * st->o.rounds, r + 1,
					       st->w[w].name, va[v].name);
				one(st, w, v, &st->cell[w][v].run[r]);
			}
	bench_progress_done();
}

/* Each cell failed, or its medians; 1 when one failed. */
static int judge(struct state *st)
{
	int bad = 0;

	for (int w = 0; w < NW; w++) {
		const struct mb_run *ref = NULL;
		for (int r = 0; st->on[w] && r < st->o.rounds && !ref; r++)
			if (!st->cell[w][V_PLAIN].run[r].r.failed)
				ref = &st->cell[w][V_PLAIN].run[r].r;
		for (int v = 0; v < V_COUNT && st->on[w]; v++) {
			struct cell *c = &st->cell[w][v];
			double secs[MAX_ROUNDS], calls[MAX_ROUNDS], opens[MAX_ROUNDS], procs[MAX_ROUNDS];
			if (!va[v].on)
				continue;
			for (int r = 0; r < st->o.rounds && !c->failed; r++) {
				const struct grun *g = &c->run[r];
				int p = 0;
				if (g->r.failed) {
					snprintf(c->why, sizeof(c->why), "round %d: %s", r + 1, g->r.why);
					c->failed = 1;
					break;
				}
				if (!ref) {
					snprintf(c->why, sizeof(c->why), "no unguarded run to compare with");
					c->failed = 1;
					break;
				}
				while (p < g->r.nparts && p < ref->nparts && g->r.part[p] == ref->part[p])
					p++;
				if (p < g->r.nparts || p < ref->nparts) {
					snprintf(c->why, sizeof(c->why), "round %d: the output of %s differs from the unguarded run's",
						 r + 1, mb_part_name(&st->w[w], p));
					c->failed = 1;
				}
				secs[r] = g->r.secs, calls[r] = g->calls, opens[r] = g->opens, procs[r] = g->procs;
			}
			bad |= c->failed;
			if (!c->failed) {
				c->secs = median(secs, st->o.rounds);
				c->calls = median(calls, st->o.rounds);
				c->opens = median(opens, st->o.rounds);
				c->procs = (int)median(procs, st->o.rounds);
			}
		}
	}
	return bad;
}

/* ---- the table ---- */

/* 1234567 as "1,234,567". */
static const char *grouped(double x, char *buf, size_t len)
{
	char d[32];
	int n = snprintf(d, sizeof(d), "%.0f", x), k = 0;

	for (int i = 0; i < n && k + 2 < (int)len; i++) {
		buf[k++] = d[i];
		if ((n - i - 1) % 3 == 0 && i < n - 1)
			buf[k++] = ',';
	}
	buf[k] = 0;
	return buf;
}

static int note_no;

static void print_table(const struct state *st)
{
	char c1[32], c2[32], c3[32], cell[64];

	printf("\nwall time, median of %d: seconds unguarded and guarded, guarded / unguarded\n"
	       "(lower is faster); the calls through the gate a run (all its processes; the\n"
	       "library's own calls of its exports skip it, callbacks calling back in do not),\n"
	       "those from outside (each opens and closes the domain), calls per second of the\n"
	       "guarded run, and the time added per call from outside (start-up patching\n"
	       "included)\n", st->o.rounds);
	printf("  %-10s %-10s %-4s %9s %9s %6s %11s %10s %10s %10s\n", "workload", "library", "on", "unguarded",
	       "guarded", "ratio", "calls", "outside", "calls/s", "us/outside");
	for (int v = V_HW; v < V_COUNT; v++) {
		double sum = 0;
		int n = 0, rows = 0;
		if (!va[v].on)
			continue;
		for (int w = 0; w < NW; w++) {
			const struct cell *c = &st->cell[w][v], *p = &st->cell[w][V_PLAIN];
			if (!st->on[w])
				continue;
			rows++;
			printf("  %-10s %-10s %-4s ", st->w[w].name, works[w].lib, va[v].name);
			if (c->failed || p->failed) {
				snprintf(cell, sizeof(cell), "ERROR [%d]", ++note_no);
				printf("%9s %9s\n", p->failed ? cell : "", c->failed ? (p->failed ? "" : cell) : "");
				continue;
			}
			double ratio = c->secs / p->secs;
			sum += log(ratio), n++;
			printf("%8.3fs %8.3fs %5.2fx %11s %10s %10s %10.2f\n", p->secs, c->secs, ratio,
			       grouped(c->calls, c1, sizeof(c1)), grouped(c->opens, c2, sizeof(c2)),
			       grouped(c->secs > 0 ? c->calls / c->secs : 0, c3, sizeof(c3)),
			       c->opens > 0 ? (c->secs - p->secs) / c->opens * 1e6 : 0.0);
		}
		if (n)
			printf("  %-10s %-10s %-4s %9s %9s %5.2fx%s\n", "geomean", "", va[v].name, "", "", exp(sum / n),
			       n < rows ? "*" : "");
	}
}

static void print_errors(const struct state *st)
{
	int k = 0;

	for (int v = V_HW; v < V_COUNT; v++)
		for (int w = 0; w < NW && va[v].on; w++) {
			const struct cell *c = &st->cell[w][v], *p = &st->cell[w][V_PLAIN];
			if (!st->on[w] || !(c->failed || p->failed))
				continue;
			printf("%s  [%d] %s, %s: %s\n", k ? "" : "\nerrors:\n", k + 1, st->w[w].name,
			       p->failed ? "unguarded" : va[v].name, p->failed ? p->why : c->why);
			k++;
		}
}

static void print_header(const struct state *st)
{
	int nw = 0;

	for (int w = 0; w < NW; w++)
		nw += st->on[w];
	printf("mpkit bench guard: %d workload%s, %d round%s interleaved, mpkit %s, %ld CPUs\n", nw, nw == 1 ? "" : "s",
	       st->o.rounds, st->o.rounds == 1 ? "" : "s", mpk_version(), sysconf(_SC_NPROCESSORS_ONLN));
	if (st->o.smoke)
		printf("SMOKE RUN: small inputs, one round: the timings mean nothing\n");
	printf("helper: %s (MPKIT_GUARD_DENY=write%s)\n", st->helper, st->o.heap ? ", MPKIT_GUARD_HEAP=1" : "");
	printf("workloads:\n");
	for (int w = 0; w < NW; w++)
		if (st->on[w])
			printf("  %-10s %s (%s)\n", st->w[w].name, st->w[w].what, st->prog[w]);
	printf("backends:\n");
	if (va[V_HW].on)
		printf("  hw    protection keys: a call from outside is 2 WRPKRU (open, close), no system call\n");
	else
		printf("  hw    left out: %s\n", va[V_HW].why);
	printf("  soft  mprotect(): a call from outside is 2 mprotect() system calls (open, close),\n"
	       "        process-wide; a library called often from outside pays them each time\n");
}

/* ---- what is there ---- */

static void find(struct state *st)
{
	char any[PATH_MAX];
	const char *h = getenv("MPKIT_GUARD_HELPER"), *be = getenv("MPKIT_BACKEND");

	if (h && *h)
		snprintf(st->helper, sizeof(st->helper), "%s", h);
	else
		bench_beside_me("libmpkit-guard.so", st->helper, sizeof(st->helper));
	/* hw where mpkit finds keys; MPKIT_BACKEND=soft asks for soft only. */
	va[V_SOFT].on = 1;
	if (be && !strcmp(be, "soft"))
		snprintf(va[V_HW].why, sizeof(va[V_HW].why), "MPKIT_BACKEND=soft");
	else if (mpk_init())
		snprintf(va[V_HW].why, sizeof(va[V_HW].why), "mpkit cannot start: %s", strerror(errno));
	else if (mpk_backend() != MPK_BACKEND_HW)
		snprintf(va[V_HW].why, sizeof(va[V_HW].why), "this machine has no protection keys (mpkit info)");
	else
		va[V_HW].on = 1;
	for (int w = 0; w < NW; w++) {
		st->w[w] = works[w].w;
		for (int k = 0; works[w].borrow && k < mb_nworks; k++)
			if (!strcmp(mb_works[k].name, works[w].borrow))
				st->w[w] = mb_works[k];
		if (!listed(st->o.workloads, st->w[w].name))
			continue;
		if (!bench_find_on_path(st->w[w].prog, st->prog[w], sizeof(st->prog[w]), bench_not_script))
			st->on[w] = 1;
		else if (!bench_find_on_path(st->w[w].prog, any, sizeof(any), NULL))
			printf("skipped %s: %s on PATH is a script, and no program of that name is behind it\n",
			       st->w[w].name, any);
		else
			printf("skipped %s: %s not found on PATH (this benchmark installs nothing)\n", st->w[w].name,
			       st->w[w].prog);
	}
}

/* ---- main ---- */

static struct state st;

int main(int argc, char **argv)
{
	char dir[PATH_MAX + 64];
	const char *tmp = getenv("TMPDIR");
	int nw = 0, bad = 0;

	me = bench_prog(argv[0], "guard");
	int rc = parse(argc, argv, &st.o);
	if (rc >= 0)
		return rc;
	bench_catch_stop();
	bench_progress_start(st.o.quiet);
	find(&st);
	if (access(st.helper, R_OK)) {
		fprintf(stderr, "%s: %s: %s (make builds libmpkit-guard.so)\n", me, st.helper, strerror(errno));
		return 1;
	}
	snprintf(st.tmp, sizeof(st.tmp), "%s/mpkit-bench-guard.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(st.tmp)) {
		fprintf(stderr, "%s: cannot make a directory in %s: %s\n", me, tmp && *tmp ? tmp : "/tmp", strerror(errno));
		return 1;
	}
	for (int w = 0; w < NW && !bench_stop; w++) {
		if (!st.on[w])
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", st.tmp, st.w[w].name);
		if (mkdir(dir, 0755) || st.w[w].setup(dir, st.o.smoke)) {
			fprintf(stderr, "%s: %s: cannot write the inputs in %s: %s\n", me, st.w[w].name, dir, strerror(errno));
			st.on[w] = 0, bad = 1;
		}
		nw += st.on[w];
	}
	if (nw && !bench_stop)
		run_all(&st);
	if (bench_stop) {
		fprintf(stderr, "%s: stopped by signal %d; removing %s\n", me, (int)bench_stop, st.tmp);
		if (mb_rmtree(st.tmp))
			fprintf(stderr, "%s: cannot remove %s: %s\n", me, st.tmp, strerror(errno));
		return 128 + bench_stop;
	}
	if (nw) {
		bad |= judge(&st);
		print_header(&st);
		print_table(&st);
		print_errors(&st);
	} else if (!bad) {
		printf("nothing to run: none of the workloads' programs is here\n");
	}
	if (mb_rmtree(st.tmp))
		fprintf(stderr, "%s: cannot remove %s: %s\n", me, st.tmp, strerror(errno));
	return bench_output_ok(me) ? bad : 1;
}
