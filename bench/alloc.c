/* SPDX-License-Identifier: MIT */
/*
 * mpkit-bench-alloc: heaps and vaults side by side with what C programmers
 * use today, in one run.
 *
 *   heap:  mpk_heap against glibc malloc, and jemalloc and mimalloc when
 *          installed (loaded with dlopen), on five workloads and a scaling
 *          pair, with the metadata open and closed, and how often a
 *          small malloc+free opens the metadata (WRPKRU pairs on hw);
 *   vault: 32-byte secret allocate+free and open+close against libsodium's
 *          sodium_malloc/sodium_free and sodium_mprotect_readwrite/noaccess,
 *          and what a secret costs in address space and locked memory.
 *
 * Each figure is the median of several runs; ratios are printed next to
 * them.  Every variant runs in a child of its own, since the backend and
 * the metadata mode are chosen once per process.  Public API only.
 *
 *   mpkit-bench-alloc [--smoke] [--reps N] [--quiet]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <mpkit.h>

#include "extlib.h"
#include "options.h"
#include "output.h"
#include "timing.h"
#ifdef MPKIT_BENCH_SODIUM /* found only for glibc builds (Debian's) */
#include <gnu/libc-version.h>
#include <sodium.h>
#endif

#define MAXRUNS 31

static int runs = 7;
static double scale = 1.0; /* --smoke: a tenth of the work */
static int quiet;

/* A call the figures depend on failed: no figures. */
static void die(const char *call)
{
	perror(call);
	exit(1);
}

static long iters(long n)
{
	long k = (long)(n * scale);
	return k > 10 ? k : 10;
}

/* ---- the allocators under test, behind one interface ---- */

/* jemalloc and mimalloc replace malloc in a process of their own: their
 * variant runs this program again with the library in LD_PRELOAD (either
 * needs static TLS, which dlopen() cannot give), so the benchmark builds
 * without them and says when they are absent. */
enum { A_GLIBC, A_JEMALLOC, A_MIMALLOC, A_HEAP, A_GUARDED };

static const char *const ext_lib[] = { NULL, "libjemalloc.so.2", "libmimalloc.so.2" };

struct alloc {
	int kind;
	mpk_heap *h;
	mpk_heap *h2; /* w_threads: the second thread's heap, if its own */
};

/* malloc() is glibc's, or jemalloc's or mimalloc's where preloaded. */
static inline bool is_libc(const struct alloc *a)
{
	return a->kind < A_HEAP;
}

static inline void *a_malloc(struct alloc *a, size_t n)
{
	return is_libc(a) ? malloc(n) : mpk_heap_malloc(a->h, n);
}

static inline void a_free(struct alloc *a, void *p)
{
	if (is_libc(a))
		free(p);
	else
		mpk_heap_free(a->h, p);
}

static inline void *a_realloc(struct alloc *a, void *p, size_t n)
{
	return is_libc(a) ? realloc(p, n) : mpk_heap_realloc(a->h, p, n);
}

/* ---- heap workloads: ns per malloc+free pair (or per realloc) ---- */

#define BATCH 1000
static const size_t small_sizes[8] = { 16, 24, 32, 48, 64, 96, 128, 256 };

static inline uint32_t rnd(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

/* malloc then free at once: an allocator's fast path. */
static double w_pairs(struct alloc *a, long n)
{
	double t = now_ns();
	for (long i = 0; i < n; i++) {
		void *p = a_malloc(a, small_sizes[i & 7]);
		*(volatile char *)p = 1;
		a_free(a, p);
	}
	return (now_ns() - t) / n;
}

/* 1000 live blocks of mixed small sizes, each freed at random and
 * replaced (a malloc+free pair per step). */
static double w_live(struct alloc *a, long n)
{
	void *p[BATCH]; /* threads run it at once */
	uint32_t x = 2463534242u;

	for (int i = 0; i < BATCH; i++)
		p[i] = a_malloc(a, small_sizes[i & 7]);
	double t = now_ns();
	for (long i = 0; i < n; i++) {
		uint32_t r = rnd(&x);
		a_free(a, p[r % BATCH]);
		p[r % BATCH] = a_malloc(a, small_sizes[(r >> 16) & 7]);
		*(volatile char *)p[r % BATCH] = 1;
	}
	t = (now_ns() - t) / n;
	for (int i = 0; i < BATCH; i++)
		a_free(a, p[i]);
	return t;
}

/* Blocks of 8 B to 64 KiB (log-uniform), 1000 live, replaced at random. */
static double w_mix(struct alloc *a, long n)
{
	void *p[BATCH];
	uint32_t x = 88675123u;

	for (int i = 0; i < BATCH; i++)
		p[i] = a_malloc(a, 8);
	double t = now_ns();
	for (long i = 0; i < n; i++) {
		uint32_t r = rnd(&x);
		size_t size = ((size_t)8 << ((r >> 10) % 14)) + (r >> 24);
		a_free(a, p[r % BATCH]);
		p[r % BATCH] = a_malloc(a, size);
		*(volatile char *)p[r % BATCH] = 1;
	}
	t = (now_ns() - t) / n;
	for (int i = 0; i < BATCH; i++)
		a_free(a, p[i]);
	return t;
}

/* realloc doubling from 16 B to 1 MiB, touching the new end: ns per
 * realloc. */
static double w_realloc(struct alloc *a, long n)
{
	long rounds = n / 16 > 0 ? n / 16 : 1, calls = 0;
	double t = now_ns();

	for (long r = 0; r < rounds; r++) {
		char *p = a_malloc(a, 16);
		for (size_t size = 32; size <= ((size_t)1 << 20); size *= 2, calls++) {
			p = a_realloc(a, p, size);
			p[size - 1] = 1;
		}
		a_free(a, p);
	}
	return (now_ns() - t) / calls;
}

struct thread_arg {
	struct alloc *a;
	long n;
	double ns, cpu_ns; /* per operation: wall clock, and the thread's CPU time */
	void *volatile *shared; /* larson: slots both threads swap into */
	unsigned seed;
};

/* A thread that uses the blocks holds rights to them (new threads inherit
 * them on hw, not on soft). */
static void thread_rights(struct alloc *a)
{
	if (a->kind == A_HEAP && mpk_set(mpk_heap_domain(a->h), MPK_RW))
		die("mpk_set");
}

static void *thread_live(void *arg)
{
	struct thread_arg *t = arg;

	thread_rights(t->a);
	double c = cpu_ns();
	t->ns = w_live(t->a, t->n);
	t->cpu_ns = (cpu_ns() - c) / t->n; /* w_live's setup included: the same alone or not */
	return NULL;
}

/* Larson-like: both threads put new blocks into shared slots and free
 * what they take out, so about half the frees are of the other thread's
 * blocks. */
static void *thread_larson(void *arg)
{
	struct thread_arg *t = arg;
	uint32_t x = t->seed;

	thread_rights(t->a);
	double t0 = now_ns();
	for (long i = 0; i < t->n; i++) {
		uint32_t r = rnd(&x);
		void *p = a_malloc(t->a, small_sizes[(r >> 16) & 7]);
		*(volatile char *)p = 1;
		void *q = __atomic_exchange_n(&t->shared[r % BATCH], p, __ATOMIC_ACQ_REL);
		if (q)
			a_free(t->a, q);
	}
	t->ns = (now_ns() - t0) / t->n;
	return NULL;
}

/* nthreads threads running fn; the second on a heap of its own if own
 * (and a->h2 is set).  Process throughput, as ns per pair. */
/* The last run_threads()'s figure in CPU time: ns per operation if every
 * thread had a core of its own all along (med_of() keeps its best run's). */
static double last_cpu;

static double run_threads(struct alloc *a, long n, int nthreads, void *(*fn)(void *), bool own_heap)
{
	static void *volatile slots[BATCH];
	pthread_t th[2];
	struct alloc own = *a;
	struct thread_arg arg[2] = { { .a = a, .n = n, .shared = slots, .seed = 1u },
				     { .a = &own, .n = n, .shared = slots, .seed = 77u } };

	if (a->h2 && own_heap)
		own.h = a->h2;
	for (int i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, fn, &arg[i]);
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < BATCH; i++)
		if (slots[i]) {
			a_free(a, slots[i]);
			slots[i] = NULL;
		}
	double per_s = 0, per_cpu_s = 0;
	for (int i = 0; i < nthreads; i++) {
		per_s += 1.0 / arg[i].ns;
		per_cpu_s += arg[i].cpu_ns > 0 ? 1.0 / arg[i].cpu_ns : 0;
	}
	last_cpu = per_cpu_s > 0 ? 1.0 / per_cpu_s : 0;
	return 1.0 / per_s;
}

static double w_larson(struct alloc *a, long n)
{
	return run_threads(a, n, 2, thread_larson, false);
}

static double w_one(struct alloc *a, long n)
{
	return run_threads(a, n, 1, thread_live, false);
}

/* Two threads, each with a heap of its own (glibc: its arenas). */
static double w_two(struct alloc *a, long n)
{
	return run_threads(a, n, 2, thread_live, true);
}

/* ---- vault workloads ---- */

#ifdef MPKIT_BENCH_SODIUM
static double s_alloc_free(long n)
{
	double t = now_ns();
	for (long i = 0; i < n; i++) {
		unsigned char *k = sodium_malloc(32);
		k[0] = 1;
		sodium_free(k);
	}
	return (now_ns() - t) / n;
}

static double s_open_close(long n)
{
	unsigned char *k = sodium_malloc(32);
	double t = now_ns();

	sodium_mprotect_noaccess(k);
	for (long i = 0; i < n; i++) {
		sodium_mprotect_readwrite(k);
		k[0]++;
		sodium_mprotect_noaccess(k);
	}
	t = (now_ns() - t) / n;
	sodium_free(k);
	return t;
}
#endif

static double v_alloc_free(mpk_domain *d, long n)
{
	double t = now_ns();
	for (long i = 0; i < n; i++) {
		unsigned char *k = mpk_secret_alloc(d, 32);
		MPK_WITH(d, MPK_RW) {
			k[0] = 1;
		}
		mpk_secret_free(k);
	}
	return (now_ns() - t) / n;
}

static double v_open_close(mpk_domain *d, long n)
{
	unsigned char *k = mpk_secret_alloc(d, 32);
	double t = now_ns();

	for (long i = 0; i < n; i++) {
		if (mpk_secret_readwrite(k))
			die("mpk_secret_readwrite");
		k[0]++;
		if (mpk_secret_noaccess(k))
			die("mpk_secret_noaccess");
	}
	t = (now_ns() - t) / n;
	mpk_secret_free(k);
	return t;
}

static double v_with(mpk_domain *d, long n)
{
	unsigned char *k = mpk_secret_alloc(d, 32);
	double t = now_ns();

	for (long i = 0; i < n; i++)
		MPK_WITH(d, MPK_RW) {
			k[0]++;
		}
	t = (now_ns() - t) / n;
	mpk_secret_free(k);
	return t;
}

/* VmSize and VmLck of this process, bytes. */
static void vm_sizes(double *vsize, double *locked)
{
	char line[256];
	long v;
	FILE *f = fopen("/proc/self/status", "r");

	*vsize = *locked = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "VmSize: %ld kB", &v) == 1)
			*vsize = v * 1024.0;
		if (sscanf(line, "VmLck: %ld kB", &v) == 1)
			*locked = v * 1024.0;
	}
	fclose(f);
}

#define NKEYS 1000

/* Address space and locked memory per 32-byte secret, 1000 of them live,
 * in a vault of their own (mpkit) from nothing. */
static void v_footprint(int sodium, double *vs, double *lk)
{
	static void *k[NKEYS];
	double v0, l0, v1, l1;
	mpk_domain *d = sodium ? NULL : mpk_domain_create("bench-footprint", MPK_NONE, 0);

	vm_sizes(&v0, &l0);
	for (int i = 0; i < NKEYS; i++) {
#ifdef MPKIT_BENCH_SODIUM
		if (sodium) {
			k[i] = sodium_malloc(32);
			continue;
		}
#endif
		(void)sodium;
		k[i] = mpk_secret_alloc(d, 32);
	}
	vm_sizes(&v1, &l1);
	*vs = (v1 - v0) / NKEYS;
	*lk = (l1 - l0) / NKEYS;
	for (int i = 0; i < NKEYS; i++) {
#ifdef MPKIT_BENCH_SODIUM
		if (sodium) {
			sodium_free(k[i]);
			continue;
		}
#endif
		mpk_secret_free(k[i]);
	}
	if (d)
		mpk_domain_destroy(d);
}

/* ---- variants: each in a child, results through a pipe ---- */

enum {
	R_PAIRS, R_LIVE, R_LARSON, R_REALLOC, R_MIX, R_ONE, R_TWO, /* heap workloads */
	R_OPENS, /* metadata opens per malloc+free pair, one at a time */
	R_GUARDED,
	R_VAULT_AF, R_VAULT_OC, R_VAULT_WITH, R_VAULT_VS, R_VAULT_LK,
	R_SCALE, /* R_ONE / R_TWO of one round, then their median */
	R_SCALE_CPU, /* the same in CPU time */
	R_COUNT
};
#define R_HEAP_LAST R_TWO

struct result {
	int ok;
	int absent; /* jemalloc or mimalloc not installed */
	int backend;
	int meta_closed;
	double v[R_COUNT];
	/* mpk_heap variants: glibc's figure from the same process, its runs
	 * alternating with the heap's (then the ratio, after combine()). */
	double ref[R_HEAP_LAST + 1];
	double cpu[R_HEAP_LAST + 1]; /* thread workloads: run_threads()'s CPU-time figure */
	char err[120];
};

/* A round's figure for one workload: the best of BEST runs after a warm
 * up (a run is some 20 ms: a neighbour's burst on a shared core makes one
 * slow, never fast); main() takes the median of the rounds.  With ref,
 * glibc's runs alternate with a's in the same process, its best in *ref:
 * the two then see the same machine, which on shared cores drifts by
 * tens of percent between one process and the next. */
#define BEST 3
static double med_of(double (*f)(struct alloc *, long), struct alloc *a, long n, double *ref,
		     double *cpu)
{
	struct alloc g = { A_GLIBC, NULL, NULL };
	double best = 0, gbest = 0;

	if (ref)
		f(&g, n / 10);
	f(a, n / 10); /* warm up */
	for (int r = 0; r < BEST * runs; r++) {
		double v = ref ? f(&g, n) : 0;
		if (ref && (r == 0 || v < gbest))
			gbest = v;
		last_cpu = 0;
		v = f(a, n);
		if (r == 0 || v < best) {
			best = v;
			if (cpu)
				*cpu = last_cpu;
		}
	}
	if (ref)
		*ref = gbest;
	return best;
}

static double med_vault(double (*f)(mpk_domain *, long), mpk_domain *d, long n)
{
	double v[MAXRUNS];
	f(d, n / 10);
	for (int r = 0; r < runs; r++)
		v[r] = f(d, n);
	return median(v, runs);
}

static double (*const workload[])(struct alloc *, long) = {
	w_pairs, w_live, w_larson, w_realloc, w_mix, w_one, w_two,
};
static const long work[] = { 2000000, 2000000, 1000000, 32000, 400000, 1000000, 1000000 };

/* The heap workloads, k times the usual work. */
static void heap_rows(struct alloc *a, struct result *res, double k)
{
	for (int w = 0; w <= R_HEAP_LAST; w++)
		res->v[w] = med_of(workload[w], a, iters((long)(work[w] * k)),
				   a->kind == A_HEAP ? &res->ref[w] : NULL, &res->cpu[w]);
}

/* What one variant measures: glibc (kind A_GLIBC), jemalloc, mimalloc or
 * mpkit; heap_only for the metadata mode that is not the default. */
static void measure(int kind, int heap_only, struct result *res)
{
	struct alloc a = { kind, NULL, NULL };
	mpk_domain *d = NULL;

	if (kind == A_JEMALLOC || kind == A_MIMALLOC) {
		heap_rows(&a, res, 1); /* preloaded: malloc() is theirs */
		res->ok = 1;
		return;
	}
	if (kind != A_GLIBC) {
		res->backend = mpk_backend();
		if (res->backend < 0 || !(d = mpk_domain_create("bench-heap", MPK_RW, 0)) ||
		    !(a.h = mpk_heap_create(d, 0)) || !(a.h2 = mpk_heap_create(d, 0))) {
			snprintf(res->err, sizeof(res->err), "heap: %s", strerror(errno));
			return;
		}
		struct mpk_heap_stats st, st2;
		mpk_heap_stats_get(a.h, &st);
		res->meta_closed = st.meta_closed;
		long n = iters(200000);
		w_pairs(&a, n / 10);
		mpk_heap_stats_get(a.h, &st);
		w_pairs(&a, n);
		mpk_heap_stats_get(a.h, &st2);
		res->v[R_OPENS] = (double)(st2.meta_opens - st.meta_opens - 1) / n;
	}
	/* The domain-switching soft variant is slow: less work. */
	double k = (kind != A_GLIBC && res->meta_closed && res->backend == MPK_BACKEND_SOFT) ? 0.01 : 1;
	heap_rows(&a, res, k);
	if (a.h2) {
		mpk_heap_destroy(a.h2);
		a.h2 = NULL;
	}
	if (kind == A_GLIBC) {
#ifdef MPKIT_BENCH_SODIUM
		double v[MAXRUNS];
		for (int r = 0; r < runs; r++)
			v[r] = s_alloc_free(iters(20000));
		res->v[R_VAULT_AF] = median(v, runs);
		for (int r = 0; r < runs; r++)
			v[r] = s_open_close(iters(20000));
		res->v[R_VAULT_OC] = median(v, runs);
		v_footprint(1, &res->v[R_VAULT_VS], &res->v[R_VAULT_LK]);
#endif
		res->ok = 1;
		return;
	}
	if (heap_only) {
		mpk_heap_destroy(a.h);
		mpk_domain_destroy(d);
		res->ok = 1;
		return;
	}
	struct alloc g = { A_GUARDED, mpk_heap_create(d, MPK_HEAP_GUARDED), NULL };
	if (g.h) {
		res->v[R_GUARDED] = med_of(w_pairs, &g, iters(20000), NULL, NULL);
		mpk_heap_destroy(g.h);
	}
	mpk_heap_destroy(a.h);

	mpk_domain *keys = mpk_domain_create("bench-keys", MPK_NONE, 0);
	if (!keys) {
		snprintf(res->err, sizeof(res->err), "domain: %s", strerror(errno));
		return;
	}
	res->v[R_VAULT_AF] = med_vault(v_alloc_free, keys, iters(200000));
	long oc = res->backend == MPK_BACKEND_HW ? 2000000 : 20000;
	res->v[R_VAULT_OC] = med_vault(v_open_close, keys, iters(oc));
	res->v[R_VAULT_WITH] = med_vault(v_with, keys, iters(oc));
	v_footprint(0, &res->v[R_VAULT_VS], &res->v[R_VAULT_LK]);
	mpk_domain_destroy(keys);
	mpk_domain_destroy(d);
	res->ok = 1;
}

static void variant(int kind, const char *meta, int heap_only, struct result *res)
{
	int fds[2], status;

	memset(res, 0, sizeof(*res));
	if (pipe(fds)) {
		snprintf(res->err, sizeof(res->err), "pipe: %s", strerror(errno));
		return;
	}
	fflush(NULL);
	char lib[256], fd[16], k[16], rn[16], sc[32];
	if ((kind == A_JEMALLOC || kind == A_MIMALLOC) && !bench_lib_path(ext_lib[kind], lib, sizeof(lib))) {
		res->absent = res->ok = 1;
		close(fds[0]);
		close(fds[1]);
		return;
	}
	pid_t pid = fork();
	if (pid == 0 && (kind == A_JEMALLOC || kind == A_MIMALLOC)) {
		/* Again, with their malloc: see main(). */
		close(fds[0]);
		snprintf(fd, sizeof(fd), "%d", fds[1]);
		snprintf(k, sizeof(k), "%d", kind);
		snprintf(rn, sizeof(rn), "%d", runs);
		snprintf(sc, sizeof(sc), "%g", scale);
		setenv("LD_PRELOAD", lib, 1);
		execl("/proc/self/exe", "mpkit-bench-alloc", "--preloaded", k, fd, rn, sc, (char *)NULL);
		_exit(127);
	}
	if (pid == 0) {
		struct result r = { 0 };
		close(fds[0]);
		if (meta)
			setenv("MPKIT_HEAP_META", meta, 1);
		measure(kind, heap_only, &r);
		if (write(fds[1], &r, sizeof(r)) != (ssize_t)sizeof(r))
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	if (pid < 0 || read(fds[0], res, sizeof(*res)) != (ssize_t)sizeof(*res)) {
		snprintf(res->err, sizeof(res->err), "the child failed");
		if (kind == A_JEMALLOC || kind == A_MIMALLOC)
			res->absent = res->ok = 1; /* could not run it: say so */
	}
	close(fds[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
}

/* One variant's rounds as one result: each figure the median of its
 * rounds, the scaling the median of each round's own ratio (one thread
 * and two measured back to back in one process). */
static void combine(struct result *round, int n, struct result *out)
{
	double v[MAXRUNS];

	*out = round[0];
	for (int r = 0; r < n; r++) {
		if (!round[r].ok && !out->err[0])
			memcpy(out->err, round[r].err, sizeof(out->err));
		out->ok &= round[r].ok;
	}
	for (int w = 0; w < R_COUNT; w++) {
		int k = 0;
		for (int r = 0; r < n; r++) {
			const double *x = round[r].v;
			const double *c = round[r].cpu;
			double y = w == R_SCALE ? (x[R_TWO] > 0 ? x[R_ONE] / x[R_TWO] : 0)
				 : w == R_SCALE_CPU ? (c[R_TWO] > 0 ? c[R_ONE] / c[R_TWO] : 0)
				 : x[w];
			if (y > 0)
				v[k++] = y;
		}
		out->v[w] = k ? median(v, k) : 0;
	}
	for (int w = 0; w <= R_HEAP_LAST; w++) {
		int k = 0;
		for (int r = 0; r < n; r++)
			if (round[r].v[w] > 0 && round[r].ref[w] > 0)
				v[k++] = round[r].ref[w] / round[r].v[w];
		out->ref[w] = k ? median(v, k) : 0;
	}
}

/* ---- report ---- */

static void machine(void)
{
	char line[256], cpu[128] = "unknown CPU";
	struct utsname u;
	struct mpk_info info;
	FILE *f = fopen("/proc/cpuinfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
			snprintf(cpu, sizeof(cpu), "%s", strchr(line, ':') + 2);
			cpu[strcspn(cpu, "\n")] = 0;
			break;
		}
	if (f)
		fclose(f);
	uname(&u);
	mpk_info(&info); /* in this process: the variants run in children */
	printf("machine: %s, %ld CPUs, Linux %s, PKU %s, backend %s\n", cpu,
	       sysconf(_SC_NPROCESSORS_ONLN), u.release,
	       info.cpu_pku && info.cpu_ospke ? "yes" : "no",
	       mpk_backend_name(info.backend) ? mpk_backend_name(info.backend) : "?");
	int emulated = strstr(cpu, "QEMU") != NULL;
	f = fopen("/proc/cpuinfo", "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "flags", 5) && strstr(line, " hypervisor"))
			emulated |= info.backend == MPK_BACKEND_HW; /* PKU in a VM: often emulated */
	if (f)
		fclose(f);
	if (emulated)
		printf("note: a virtual machine that may emulate PKU (QEMU TCG): a correctness run, the timings mean nothing\n");
#ifdef MPKIT_BENCH_SODIUM
	printf("libsodium %s, glibc %s; median of %d rounds (each runs every allocator once; a round's figure is its best of 3 runs)\n\n",
	       sodium_version_string(), gnu_get_libc_version(), runs);
#else
	printf("built without libsodium: its rows are missing; median of %d rounds (each runs every allocator once; a round's figure is its best of 3 runs)\n\n",
	       runs);
#endif
}

static void row(const char *what, double ns, double ref, const char *unit)
{
	if (ns <= 0) {
		printf("  %-52s %12s\n", what, "n/a");
		return;
	}
	if (ref > 0)
		printf("  %-52s %9.1f ns %8.2f%s\n", what, ns, ref / ns, unit);
	else
		printf("  %-52s %9.1f ns\n", what, ns);
}

/* The variants, in the order of the table's columns (V_DEFAULT: the
 * metadata mode mpkit picks here, V_OTHER: the other one). */
enum { V_GLIBC, V_JEMALLOC, V_MIMALLOC, V_DEFAULT, V_OTHER, V_COUNT };

static const char *me = "mpkit-bench-alloc";

/* The options; a --preloaded child measures here.  -1 to go on, or the
 * exit status. */
static int parse_args(int argc, char **argv)
{
	int smoke = 0, runs_given = 0;
	const struct bench_opt opts[] = {
		{ "reps", 0, BO_INT, &runs, "N", "rounds, each figure their median (default 7)", 1, MAXRUNS,
		  .given = &runs_given },
		{ "smoke", 0, BO_FLAG, &smoke, NULL, "a tenth of the work, 3 rounds: a correctness run" },
		{ "quiet", 'q', BO_FLAG, &quiet, NULL, "no progress on stderr" },
		{ "quick", 0, BO_FLAG, &smoke, NULL, NULL },
		{ "runs", 0, BO_INT, &runs, "N", NULL, 1, MAXRUNS, .given = &runs_given },
		{ NULL, 0 },
	};
	struct bench_cli cli = { NULL, "Heaps against glibc malloc (and jemalloc, mimalloc when installed),\n"
					   "vaults against libsodium: ns per call, medians, ratios.\n", NULL, opts };

	if (argc == 6 && !strcmp(argv[1], "--preloaded")) {
		/* A variant's child, with jemalloc or mimalloc preloaded. */
		struct result r = { 0 };
		int fd = atoi(argv[3]);
		runs = atoi(argv[4]);
		scale = atof(argv[5]);
		if (runs < 1 || runs > MAXRUNS)
			return 2;
		measure(atoi(argv[2]), 1, &r);
		return write(fd, &r, sizeof(r)) == (ssize_t)sizeof(r) ? 0 : 1;
	}
	me = cli.prog = bench_prog(argv[0], "alloc");
	int rc = bench_options(&cli, argc, argv);
	if (smoke) {
		scale = 0.1;
		runs = runs_given ? runs : 3;
	}
	return rc;
}

/* Rounds, not one allocator's runs after another's: a machine whose speed
 * drifts (shared cores) then slows every column alike, and the ratios
 * hold.  Each child measures once.  0, or 1 when a variant failed. */
static int measure_all(struct result v[V_COUNT])
{
	static struct result round[V_COUNT][MAXRUNS];
	int rounds = runs;

	runs = 1;
	for (int r = 0; r < rounds; r++) {
		bench_progress("round %d of %d", r + 1, rounds);
		variant(A_GLIBC, NULL, 0, &round[V_GLIBC][r]);
		variant(A_JEMALLOC, NULL, 0, &round[V_JEMALLOC][r]);
		variant(A_MIMALLOC, NULL, 0, &round[V_MIMALLOC][r]);
		variant(A_HEAP, "auto", 0, &round[V_DEFAULT][r]);
		variant(A_HEAP, round[V_DEFAULT][0].meta_closed ? "open" : "closed", 1, &round[V_OTHER][r]);
	}
	runs = rounds;
	bench_progress_done();
	for (int i = 0; i < V_COUNT; i++)
		combine(round[i], rounds, &v[i]);
	static const int must[] = { V_GLIBC, V_DEFAULT, V_OTHER };
	for (int i = 0; i < 3; i++)
		if (!v[must[i]].ok) {
			printf("a variant failed: %s\n", v[must[i]].err);
			return 1;
		}
	return 0;
}

/* A row of one figure per column: absent, n/a, or the figure. */
static void scale_row(const char *what, const struct result *const rs[5], int w)
{
	printf("  %-42s", what);
	for (int i = 0; i < 5; i++)
		if (rs[i]->absent || rs[i]->v[w] <= 0)
			printf(" %16s", rs[i]->absent ? "absent" : "n/a");
		else
			printf(" %15.2fx", rs[i]->v[w]);
	printf("\n");
}

static void print_heap(const struct result *v)
{
	static const char *wl[] = {
		"16-256 B, one at a time", "1000 live, freed at random",
		"larson-like, 2 threads, cross-thread free", "realloc x2 from 16 B to 1 MiB",
		"sizes 8 B-64 KiB mixed, 1000 live", "one thread, 1000 live (scaling base)",
		"two threads, a heap each (per process)",
	};
	static const char *col[] = { "glibc", "jemalloc", "mimalloc", "mpk open", "mpk closed" };
	const struct result *glibc = &v[V_GLIBC], *dflt = &v[V_DEFAULT];
	const struct result *o = dflt->meta_closed ? &v[V_OTHER] : dflt;
	const struct result *c = dflt->meta_closed ? dflt : &v[V_OTHER];
	const struct result *const rs[] = { glibc, &v[V_JEMALLOC], &v[V_MIMALLOC], o, c };

	printf("heap: ns per malloc+free pair (realloc: per call); (ratio) = glibc time / this\n"
	       "  (mpk columns: to glibc's runs in the same process, alternating with the heap's)\n");
	printf("  %-42s", "workload");
	for (int i = 0; i < 5; i++)
		printf(" %16s", col[i]);
	printf("\n");
	for (int w = 0; w <= R_HEAP_LAST; w++) {
		printf("  %-42s", wl[w]);
		for (int i = 0; i < 5; i++) {
			double x = rs[i]->v[w], ratio = rs[i]->ref[w] > 0 ? rs[i]->ref[w] : glibc->v[w] / x;
			if (rs[i]->absent || x <= 0)
				printf(" %16s", rs[i]->absent ? "absent" : "n/a");
			else
				printf(" %8.1f (%5.2f)", x, ratio);
		}
		printf("\n");
	}
	scale_row("2 threads / 1 thread throughput", rs, R_SCALE);
	scale_row("the same in CPU time (no core shared)", rs, R_SCALE_CPU);
	printf("  %-42s %16s %16s %16s %16.3f %16.3f\n",
	       "metadata opens per pair, one at a time", "", "", "",
	       o->meta_closed ? o->v[R_OPENS] : 0.0, c->v[R_OPENS]);
	printf("  (the default here: metadata %s; an open is 2 WRPKRU on hw, 2 mprotect on soft;%s%s)\n",
	       dflt->meta_closed ? "closed" : "open", v[V_JEMALLOC].absent ? " jemalloc absent;" : "",
	       v[V_MIMALLOC].absent ? " mimalloc absent;" : "");
	printf(" guarded heap (MPK_HEAP_GUARDED: pages and guard pages per block)\n");
	row("mpk_heap guarded, one at a time", dflt->v[R_GUARDED], glibc->v[R_PAIRS], "x");
}

static void print_vault(const struct result *glibc, const struct result *dflt)
{
	printf("\nvault: 32-byte secrets   ratio: libsodium time / this (above 1: faster)\n");
	row("sodium_malloc + sodium_free", glibc->v[R_VAULT_AF], glibc->v[R_VAULT_AF], "x");
	row("mpk_secret_alloc + mpk_secret_free", dflt->v[R_VAULT_AF], glibc->v[R_VAULT_AF], "x");
	row("sodium_mprotect_readwrite + _noaccess", glibc->v[R_VAULT_OC], glibc->v[R_VAULT_OC], "x");
	row("mpk_secret_readwrite + mpk_secret_noaccess", dflt->v[R_VAULT_OC], glibc->v[R_VAULT_OC], "x");
	row("MPK_WITH(keys, MPK_RW) { }", dflt->v[R_VAULT_WITH], glibc->v[R_VAULT_OC], "x");
	printf(" per secret, %d live:            address space      locked\n", NKEYS);
	printf("  %-30s %10.0f B %10.0f B\n", "sodium_malloc(32)", glibc->v[R_VAULT_VS], glibc->v[R_VAULT_LK]);
	printf("  %-30s %10.0f B %10.0f B\n", "mpk_secret_alloc(keys, 32)", dflt->v[R_VAULT_VS],
	       dflt->v[R_VAULT_LK]);
	printf("  (mpkit reserves address space a 1 MiB chunk at a time and locks only the pages in use)\n");
}

int main(int argc, char **argv)
{
	struct result v[V_COUNT];
	int rc = parse_args(argc, argv);

	if (rc >= 0)
		return rc;
#ifdef MPKIT_BENCH_SODIUM
	if (sodium_init() < 0) {
		fprintf(stderr, "sodium_init failed\n");
		return 1;
	}
#endif
	printf("mpkit-bench-alloc: heaps against glibc malloc, vaults against libsodium\n");
	machine();
	fflush(stdout);
	bench_progress_start(quiet);
	if (measure_all(v))
		return 1;
	print_heap(v);
	print_vault(&v[V_GLIBC], &v[V_DEFAULT]);
	return bench_output_ok(me) ? 0 : 1;
}
