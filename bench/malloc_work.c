/* SPDX-License-Identifier: MIT */
/*
 * The real programs `mpkit bench malloc` runs, and their inputs: python3
 * (PYTHONMALLOC=malloc: every object through malloc), sqlite3, git, gcc,
 * xz and zstd with two threads, sort --parallel.  Inputs are generated
 * from a fixed seed, so that every run of a workload does the same work
 * and prints the same; a run writes only into its own directory, and
 * reads its inputs from "..".  --smoke sizes are a few percent of the
 * full ones.  Then its own workloads, programs of bench/mw_*.c of the
 * kinds mimalloc-bench has (a one-thread loop, producer/consumer, a
 * larson-like server, thread churn, many small blocks, large blocks).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "malloc.h"

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static const char *const words[] = {
	"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
	"kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango",
	"uniform", "victor", "whiskey", "xray", "yankee", "zulu", "key", "page", "heap", "domain",
};
#define NWORDS (sizeof(words) / sizeof(words[0]))

static FILE *open_in(const char *dir, const char *name)
{
	char path[4096];

	snprintf(path, sizeof(path), "%.3000s/%.900s", dir, name);
	return fopen(path, "w");
}

static int close_in(FILE *f)
{
	int bad = ferror(f);
	if (fclose(f) || bad) {
		errno = errno ? errno : EIO;
		return -1;
	}
	return 0;
}

int mb_write_text(const char *dir, const char *name, long lines, uint64_t seed)
{
	FILE *f = open_in(dir, name);

	if (!f)
		return -1;
	for (long i = 0; i < lines; i++) {
		uint64_t r = rnd(&seed);
		fprintf(f, "%s,%s %s,%lu,%ld\n", words[r % NWORDS], words[(r >> 8) % NWORDS],
			words[(r >> 16) % NWORDS], (unsigned long)((r >> 24) % 100000), i);
	}
	return close_in(f);
}

int mb_write_script(const char *dir, const char *name, const char *fmt, int n)
{
	FILE *f = open_in(dir, name);

	if (!f)
		return -1;
	fprintf(f, fmt, n);
	return close_in(f);
}

/* ---- python3: dicts, json, strings ---- */

static int setup_python(const char *dir, int smoke)
{
	return mb_write_script(dir, "w.py", "import json\n"
		   "n = %d\n"
		   "d = {'k%%d' %% i: [i, str(i) * (i %% 7), {'v': i * 3, 's': 'x' * (i %% 13)}] for i in range(n)}\n"
		   "s = json.dumps(d, sort_keys=True)\n"
		   "e = json.loads(s)\n"
		   "words = s.replace('\"', ' ').split()\n"
		   "c = {}\n"
		   "for w in words:\n"
		   "    c[w] = c.get(w, 0) + 1\n"
		   "top = sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:3]\n"
		   "lines = sorted('%%d:%%s' %% (i, '-'.join(str(x) for x in range(i %% 10))) for i in range(n))\n"
		   "j = '\\n'.join(lines)\n"
		   "print(len(s), e == d, len(words), len(c), top, len(j), j[:40].replace('\\n', ' '))\n",
		smoke ? 2000 : 20000);
}

static const struct mb_step python_steps[] = {
	{ "python3 w.py", { "python3", "../w.py" }, NULL, NULL },
};

/* ---- sqlite3: rows inserted, indexed, queried, updated ---- */

static int setup_sqlite(const char *dir, int smoke)
{
	return mb_write_script(dir, "w.sql", "create table t(a integer primary key, b text, c real);\n"
		   "begin;\n"
		   "with recursive n(x) as (select 1 union all select x + 1 from n where x < %d)\n"
		   "  insert into t(b, c) select printf('row %%d %%d', x, x * x %% 977), x * 1.5 from n;\n"
		   "commit;\n"
		   "create index tb on t(b);\n"
		   "create index tc on t(c);\n"
		   "select count(*), sum(c) from t where b like 'row 4%%';\n"
		   "select b from t where b > 'row 49' order by b limit 5;\n"
		   "update t set c = c * 2 where a %% 3 = 0;\n"
		   "delete from t where a %% 7 = 0;\n"
		   "select count(*), total(c) from t;\n"
		   "select substr(b, 1, 6), count(*) from t group by 1 order by 2 desc, 1 limit 3;\n"
		   "select group_concat(b, ';') from (select b from t order by c desc limit 20);\n",
		smoke ? 3000 : 200000);
}

static const struct mb_step sqlite_steps[] = {
	{ "sqlite3 db < w.sql", { "sqlite3", "db" }, "../w.sql", NULL },
};

/* ---- git: commits of four trees, log -p, gc, fsck ---- */

#define GIT_TREES 4

/* Tree v<t>: the same files, a few lines changed, added and dropped from
 * one tree to the next. */
static int setup_git(const char *dir, int smoke)
{
	int files = smoke ? 10 : 100, lines = smoke ? 50 : 300;
	char path[4096];

	for (int t = 1; t <= GIT_TREES; t++) {
		snprintf(path, sizeof(path), "%s/v%d", dir, t);
		if (mkdir(path, 0755))
			return -1;
		for (int i = 0; i < files + t; i++) {
			snprintf(path, sizeof(path), "v%d/f%03d.txt", t, i);
			FILE *f = open_in(dir, path);
			if (!f)
				return -1;
			uint64_t s = 0x9e3779b97f4a7c15ull + (uint64_t)i;
			for (int l = 0; l < lines; l++) {
				uint64_t r = rnd(&s);
				if ((r % 97) < (unsigned)t * 3) /* changed in later trees */
					r = rnd(&s) + (uint64_t)t;
				fprintf(f, "%s %s %lu\n", words[r % NWORDS], words[(r >> 8) % NWORDS],
					(unsigned long)((r >> 16) % 1000));
			}
			if (close_in(f))
				return -1;
		}
	}
	return 0;
}

#define GIT(...) { "git", "-c", "init.defaultBranch=main", "-c", "gc.auto=0", __VA_ARGS__ }
#define GIT_COMMIT(t)                                                                            \
	{ "git add v" #t, GIT("--work-tree=../v" #t, "add", "-A"), NULL, NULL },                  \
	{ "git commit v" #t, GIT("--work-tree=../v" #t, "commit", "-q", "-m", "tree " #t), NULL, NULL }
static const struct mb_step git_steps[] = {
	{ "git init", GIT("init", "-q", "."), NULL, NULL },
	GIT_COMMIT(1),
	GIT_COMMIT(2),
	GIT_COMMIT(3),
	GIT_COMMIT(4),
	{ "git log -p", GIT("log", "-p", "--stat"), NULL, NULL },
	{ "git gc", GIT("gc", "-q"), NULL, NULL },
	{ "git fsck", GIT("fsck", "--full", "--no-progress"), NULL, NULL },
	{ "git log after gc", GIT("log", "--format=%H %T %s"), NULL, NULL },
};

/* Fixed names and dates: the commits' hashes are the same in every run;
 * no configuration of the user's or the system's. */
static const char *const git_env[] = {
	"GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@example.org", "GIT_AUTHOR_DATE=2020-01-01T00:00:00Z",
	"GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@example.org",
	"GIT_COMMITTER_DATE=2020-01-01T00:00:00Z", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
	"HOME=/nonexistent", NULL,
};

/* ---- gcc -O2: a generated C file of many functions ---- */

static int setup_gcc(const char *dir, int smoke)
{
	FILE *f = open_in(dir, "gen.c");
	int n = smoke ? 15 : 80;

	if (!f)
		return -1;
	fprintf(f, "/* generated by mpkit bench malloc */\n#include <string.h>\n");
	for (int i = 0; i < n; i++) {
		fprintf(f, "struct s%d { int a[%d]; double d; const char *name; };\n", i, 4 + i % 16);
		fprintf(f, "int f%d(int *p, int n, struct s%d *s)\n{\n\tint acc = %d;\n", i, i, i * 7);
		fprintf(f, "\tfor (int i = 0; i < n; i++) {\n\t\tswitch ((p[i] + %d) %% 8) {\n", i);
		for (int c = 0; c < 8; c++)
			fprintf(f, "\t\tcase %d: acc += p[i] * %d + s->a[%d]; s->d += acc * %d.5; break;\n", c, c + i,
				c % (4 + i % 16), c);
		fprintf(f, "\t\t}\n\t\tif (acc > %d)\n\t\t\tacc = (acc >> 3) ^ (int)strlen(s->name);\n\t}\n", 1000 + i);
		if (i)
			fprintf(f, "\tif (n > 2 && acc %% 5 == 0)\n\t\tacc += f%d(p + 1, n / 2, (void *)s);\n", i - 1);
		fprintf(f, "\treturn acc;\n}\n");
	}
	return close_in(f);
}

static const struct mb_step gcc_steps[] = {
	{ "gcc -O2 -c gen.c", { "gcc", "-O2", "-c", "../gen.c", "-o", "gen.o" }, NULL, NULL },
};

/* ---- xz -T2, zstd -T2: compress and decompress ---- */

#define TEXT_SEED 0x2545f4914f6cdd1dull
static int setup_xz(const char *dir, int smoke)
{
	return mb_write_text(dir, "in.txt", smoke ? 20000 : 150000, TEXT_SEED);
}

static int setup_zstd(const char *dir, int smoke)
{
	return mb_write_text(dir, "in.txt", smoke ? 20000 : 500000, TEXT_SEED);
}

static int setup_sort(const char *dir, int smoke)
{
	return mb_write_text(dir, "in.txt", smoke ? 20000 : 600000, TEXT_SEED);
}

static const struct mb_step xz_steps[] = {
	{ "xz -T2 -6", { "xz", "-T2", "-6", "--block-size=1MiB", "-c", "../in.txt" }, NULL, "in.xz" },
	{ "xz -T2 -d", { "xz", "-T2", "-dc", "in.xz" }, NULL, NULL },
};

static const struct mb_step zstd_steps[] = {
	{ "zstd -T2 -12", { "zstd", "-q", "-T2", "-12", "-c", "../in.txt" }, NULL, "in.zst" },
	{ "zstd -T2 -d", { "zstd", "-q", "-T2", "-dc", "in.zst" }, NULL, NULL },
};

/* ---- sort --parallel=2 ---- */

static const struct mb_step sort_steps[] = {
	{ "sort --parallel=2", { "sort", "--parallel=2", "-t,", "-k2,2", "-k4,4n", "../in.txt" }, NULL, NULL },
};

#define STEPS(s) s, (int)(sizeof(s) / sizeof(s[0]))
static const char *const python_env[] = { "PYTHONMALLOC=malloc", "PYTHONHASHSEED=0", NULL };

/* ---- its own: bench/mw_*.c, with no input; --smoke is their argument ---- */

static int setup_none(const char *dir, int smoke)
{
	(void)dir, (void)smoke;
	return 0;
}

#define MW_PROG(n) "mpkit-bench-mw-" #n
#define MW_STEPS(n)                                                                               \
	static const struct mb_step n##_steps[] = { { MW_PROG(n), { MW_PROG(n) }, NULL, NULL } };     \
	static const struct mb_step n##_smoke[] = { { MW_PROG(n) " --smoke", { MW_PROG(n), "--smoke" }, NULL, NULL } }
MW_STEPS(loop);
MW_STEPS(prodcons);
MW_STEPS(larson);
MW_STEPS(churn);
MW_STEPS(small);
MW_STEPS(large);
#define MW(n, what) { #n, MW_PROG(n), what, NULL, setup_none, STEPS(n##_steps), { NULL }, 1, n##_smoke }

const struct mb_work mb_works[] = {
	{ "python", "python3", "PYTHONMALLOC=malloc python3: a 20,000-key dict to JSON and back, words counted, strings sorted",
	  python_env, setup_python, STEPS(python_steps), { NULL } },
	{ "sqlite", "sqlite3", "sqlite3: 200,000 rows inserted, two indexes, queries, updates, deletes",
	  NULL, setup_sqlite, STEPS(sqlite_steps), { "db", NULL } },
	{ "git", "git", "git: four trees of 100 files committed, log -p, gc, fsck --full",
	  git_env, setup_git, STEPS(git_steps), { NULL } },
	{ "gcc", "gcc", "gcc -O2 -c: a generated file of 80 functions (gcc runs cc1 and as)",
	  NULL, setup_gcc, STEPS(gcc_steps), { "gen.o", NULL } },
	{ "xz", "xz", "xz -T2 -6: 150,000 lines (5 MB) compressed and decompressed",
	  NULL, setup_xz, STEPS(xz_steps), { "in.xz", NULL } },
	{ "zstd", "zstd", "zstd -T2 -12: 500,000 lines (17 MB) compressed and decompressed",
	  NULL, setup_zstd, STEPS(zstd_steps), { "in.zst", NULL } },
	{ "sort", "sort", "sort --parallel=2: 600,000 lines (21 MB) by two keys",
	  NULL, setup_sort, STEPS(sort_steps), { NULL } },
	MW(loop, "one thread: 60 million malloc+free of 16-512 bytes, 1 in 8 kept a while"),
	MW(prodcons, "a producer thread's 6 million blocks freed by a consumer thread"),
	MW(larson, "2 threads replacing random blocks of a shared pool (16 M), renewed 20 times"),
	MW(churn, "2,000 waves of 4 threads, 200 blocks each, 1 in 4 freed by the next wave"),
	MW(small, "3 million tree nodes of 24-72 bytes with temporaries, built up and freed"),
	MW(large, "100 rounds: 4 buffers grown by realloc to 4 MiB, 8 blocks of 128 KiB-2 MiB"),
};
const int mb_nworks = (int)(sizeof(mb_works) / sizeof(mb_works[0]));
