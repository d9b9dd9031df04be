/* SPDX-License-Identifier: MIT */
/*
 * mpkit-bench-rss: peak resident memory of an mpk_heap against glibc
 * malloc, and jemalloc and mimalloc when installed, on three workloads:
 *
 *   4400    20,000 blocks of 4,400 bytes live at once (just past a page:
 *           the size that once took two pages a block);
 *   mixed   8,000 live blocks of 1 B to 64 KiB (as many of each power of
 *           two), replaced at random 100,000 times;
 *   sqlite  a page cache's pattern: 12,000 blocks of 4 KiB + 264 B (a
 *           quarter 8 KiB + 264 B) evicted and read in at random, with
 *           records of 24-600 B coming and going around them.
 *
 * Every block is written whole (programs use what they ask for).  Each
 * allocator and workload runs in a process of its own (started afresh:
 * the high-water mark is per process; jemalloc and mimalloc need
 * LD_PRELOAD); the figure is its VmHWM less its VmRSS before the
 * workload, the median of 5 runs, with ratios to glibc.
 *
 *   mpkit-bench-rss
 */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mpkit.h>

#include "extlib.h"
#include "options.h"
#include "output.h"

extern char **environ;

enum { A_GLIBC, A_JEMALLOC, A_MIMALLOC, A_HEAP, A_COUNT };
static const char *const a_name[A_COUNT] = { "glibc", "jemalloc", "mimalloc", "mpk heap" };
static const char *const ext_lib[A_COUNT] = { NULL, "libjemalloc.so.2", "libmimalloc.so.2", NULL };

enum { W_4400, W_MIXED, W_SQLITE, W_COUNT };
static const char *const w_name[W_COUNT] = { "20,000 x 4,400 B", "mixed 1 B-64 KiB, 8,000 live",
					     "sqlite-like page cache" };

#define RUNS 5

static mpk_heap *heap; /* NULL: malloc() (glibc's or the preloaded one's) */

static void *xmalloc(size_t n)
{
	void *p = heap ? mpk_heap_malloc(heap, n) : malloc(n);

	if (!p) {
		perror("malloc");
		exit(1);
	}
	return memset(p, (int)(n & 0xff) | 1, n);
}

static void xfree(void *p)
{
	if (heap)
		mpk_heap_free(heap, p);
	else
		free(p);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void w_4400(void)
{
	enum { N = 20000 };
	static void *p[N];

	for (int i = 0; i < N; i++)
		p[i] = xmalloc(4400);
	for (int i = 0; i < N; i++)
		xfree(p[i]);
}

static void w_mixed(void)
{
	enum { N = 8000, OPS = 100000 };
	static void *p[N];
	uint64_t s = 0x9e3779b97f4a7c15ull;

	for (int i = 0; i < N + OPS; i++) {
		uint64_t r = rnd(&s);
		unsigned k = (unsigned)(r % 16); /* [2^k, 2^(k+1)): 1 B to 64 KiB */
		size_t size = ((size_t)1 << k) + (size_t)((r >> 8) & (((uint64_t)1 << k) - 1));
		unsigned slot = i < N ? (unsigned)i : (unsigned)((r >> 32) % N);
		if (i >= N)
			xfree(p[slot]);
		p[slot] = xmalloc(size);
	}
	for (int i = 0; i < N; i++)
		xfree(p[i]);
}

static void w_sqlite(void)
{
	enum { PAGES = 12000, RECS = 20000, OPS = 60000 };
	static void *pg[PAGES], *rec[RECS];
	uint64_t s = 0x2545f4914f6cdd1dull;

	for (int i = 0; i < PAGES + OPS; i++) {
		uint64_t r = rnd(&s);
		size_t size = (r & 3) ? 4096 + 264 : 8192 + 264;
		unsigned slot = i < PAGES ? (unsigned)i : (unsigned)((r >> 8) % PAGES);
		if (i >= PAGES)
			xfree(pg[slot]); /* evicted */
		pg[slot] = xmalloc(size);
		for (int k = 0; k < 2; k++) {
			r = rnd(&s);
			unsigned rs = (unsigned)((r >> 16) % RECS);
			if (rec[rs])
				xfree(rec[rs]);
			rec[rs] = xmalloc(24 + (size_t)(r % 577));
		}
	}
	for (int i = 0; i < PAGES; i++)
		xfree(pg[i]);
	for (int i = 0; i < RECS; i++)
		if (rec[i])
			xfree(rec[i]);
}

/* A line of /proc/self/status, in KiB. */
static long status_kib(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			v = atol(line + strlen(key));
	fclose(f);
	return v;
}

/* In the child: run workload w, print the peak it added in KiB. */
static int child(int kind, int w)
{
	static void (*const fn[W_COUNT])(void) = { w_4400, w_mixed, w_sqlite };

	if (kind == A_HEAP) {
		mpk_domain *d = mpk_domain_create("bench-rss", MPK_RW, 0);
		if (!d || !(heap = mpk_heap_create(d, 0))) {
			perror("mpk_heap_create");
			return 1;
		}
	}
	long before = status_kib("VmRSS:");
	fn[w]();
	long peak = status_kib("VmHWM:");
	if (before < 0 || peak < 0)
		return 1;
	printf("%ld\n", peak - before);
	return !bench_output_ok("mpkit-bench-rss");
}

/* Run this program again as a child measuring kind on w: KiB, 0 when the
 * allocator is absent, -1 when the child failed. */
static long variant(const char *self, int kind, int w)
{
	char lib[512], env[600], ks[8], ws[8], out[64];
	const char *path = NULL;
	int fds[2];

	if (ext_lib[kind] && !(path = bench_lib_path(ext_lib[kind], lib, sizeof(lib))))
		return 0;
	snprintf(ks, sizeof(ks), "%d", kind);
	snprintf(ws, sizeof(ws), "%d", w);
	char *argv[] = { (char *)self, "--child", ks, ws, NULL };
	/* The environment, with the library preloaded (after anything a
	 * sanitizer or the user put there). */
	size_t n = 0;
	while (environ[n])
		n++;
	char **envp = calloc(n + 2, sizeof(char *));
	if (!envp || pipe(fds))
		return -1;
	for (size_t i = 0, j = 0; i <= n; i++) {
		if (i < n && path && !strncmp(environ[i], "LD_PRELOAD=", 11))
			continue;
		envp[j++] = i < n ? environ[i] : NULL;
	}
	if (path) {
		const char *old = getenv("LD_PRELOAD");
		snprintf(env, sizeof(env), "LD_PRELOAD=%s%s%s", old ? old : "", old ? ":" : "", path);
		for (n = 0; envp[n]; n++)
			;
		envp[n] = env;
		envp[n + 1] = NULL;
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
	posix_spawn_file_actions_addclose(&fa, fds[0]);
	pid_t pid;
	int rc = posix_spawn(&pid, self, &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	free(envp);
	close(fds[1]);
	ssize_t got = rc ? -1 : read(fds[0], out, sizeof(out) - 1);
	close(fds[0]);
	int st = 0;
	if (!rc && waitpid(pid, &st, 0) < 0)
		return -1;
	if (rc || got <= 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		return -1;
	out[got] = 0;
	long kib = atol(out);
	return kib > 0 ? kib : 1;
}

int main(int argc, char **argv)
{
	int quiet = 0;
	const struct bench_opt opts[] = {
		{ "quiet", 'q', BO_FLAG, &quiet, NULL, "no progress on stderr" },
		{ NULL, 0 },
	};
	const char *me = argv[0];
	const struct bench_cli cli = { me, "A heap's peak RSS against glibc's, jemalloc's and mimalloc's.\n", NULL, opts };

	if (argc == 4 && !strcmp(argv[1], "--child"))
		return child(atoi(argv[2]), atoi(argv[3]));
	int rc = bench_options(&cli, argc, argv);
	if (rc >= 0)
		return rc;
	bench_progress_start(quiet);
	long kib[W_COUNT][A_COUNT], run[RUNS];
	int bad = 0;
	for (int w = 0; w < W_COUNT; w++)
		for (int k = 0; k < A_COUNT; k++) {
			/* The median of RUNS: purging by decay goes by the clock,
			 * which a loaded machine slows. */
			bench_progress("%s, %s", w_name[w], a_name[k]);
			for (int r = 0; r < RUNS; r++) {
				long v = variant("/proc/self/exe", k, w);
				int i = r;
				for (; i > 0 && run[i - 1] > v; i--)
					run[i] = run[i - 1];
				run[i] = v;
			}
			bad |= (kib[w][k] = run[RUNS / 2]) < 0 || run[0] < 0;
		}
	bench_progress_done();
	printf("peak RSS a workload adds (VmHWM less VmRSS before it), MiB, median of %d; "
	       "ratio to glibc\n\n", RUNS);
	printf("  %-30s", "workload");
	for (int k = 0; k < A_COUNT; k++)
		printf(" %16s", a_name[k]);
	printf("\n");
	for (int w = 0; w < W_COUNT; w++) {
		printf("  %-30s", w_name[w]);
		for (int k = 0; k < A_COUNT; k++) {
			long v = kib[w][k], g = kib[w][A_GLIBC];
			char cell[32];
			if (v < 0)
				snprintf(cell, sizeof(cell), "failed");
			else if (!v)
				snprintf(cell, sizeof(cell), "absent");
			else if (k == A_GLIBC || g <= 0)
				snprintf(cell, sizeof(cell), "%.1f", v / 1024.0);
			else
				snprintf(cell, sizeof(cell), "%.1f %5.2fx", v / 1024.0, (double)v / (double)g);
			printf(" %16s", cell);
		}
		printf("\n");
	}
	int be = mpk_backend();
	printf("\nbackend %s; the heap's metadata %s\n", be < 0 ? "none" : mpk_backend_name(be),
	       getenv("MPKIT_HEAP_META") ? getenv("MPKIT_HEAP_META") : "as mpkit picks here");
	return bench_output_ok(me) ? bad : 1;
}
