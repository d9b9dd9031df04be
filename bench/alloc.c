/* SPDX-License-Identifier: MIT */
/*
 * mpkit-bench-alloc: heaps and vaults side by side with what C programmers
 * use today, in one run.
 *
 *   heap:  small-block malloc/free throughput of mpk_heap against glibc
 *          malloc, one thread and two, with the metadata open and closed;
 *   vault: 32-byte secret allocate+free and open+close against libsodium's
 *          sodium_malloc/sodium_free and sodium_mprotect_readwrite/noaccess,
 *          and what a secret costs in address space and locked memory.
 *
 * Each figure is the median of several runs; ratios are printed next to
 * them.  Every variant runs in a child of its own, since the backend and
 * the metadata mode are chosen once per process.  Public API only.
 *
 *   mpkit-bench-alloc [--quick] [--runs N]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <gnu/libc-version.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <mpkit.h>

#include "timing.h"
#ifdef MPKIT_BENCH_SODIUM
#include <sodium.h>
#endif

#define MAXRUNS 31

static int runs = 7;
static double scale = 1.0; /* --quick: a tenth of the work */

static long iters(long n)
{
	long k = (long)(n * scale);
	return k > 10 ? k : 10;
}

/* ---- the allocators under test, behind one interface ---- */

enum { A_GLIBC, A_HEAP, A_GUARDED };

struct alloc {
	int kind;
	mpk_heap *h;
	mpk_heap *h2; /* w_threads: the second thread's heap, if its own */
};

static void *a_malloc(struct alloc *a, size_t n)
{
	return a->kind == A_GLIBC ? malloc(n) : mpk_heap_malloc(a->h, n);
}

static void a_free(struct alloc *a, void *p)
{
	if (a->kind == A_GLIBC)
		free(p);
	else
		mpk_heap_free(a->h, p);
}

/* ---- heap workloads: ns per malloc+free pair ---- */

#define BATCH 1000
static const size_t small_sizes[8] = { 16, 24, 32, 48, 64, 96, 128, 256 };

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

/* 1000 live blocks of mixed sizes, freed in another order. */
static double w_batch(struct alloc *a, long n)
{
	static void *p[BATCH];
	long rounds = n / BATCH > 0 ? n / BATCH : 1;
	double t = now_ns();

	for (long r = 0; r < rounds; r++) {
		for (int i = 0; i < BATCH; i++) {
			p[i] = a_malloc(a, small_sizes[(i * 7 + r) & 7]);
			*(volatile char *)p[i] = 1;
		}
		for (int i = 0; i < BATCH; i++)
			a_free(a, p[(i * 389) % BATCH]);
	}
	return (now_ns() - t) / (rounds * BATCH);
}

struct thread_arg {
	struct alloc *a;
	long n;
	double ns;
};

static void *thread_batch(void *arg)
{
	struct thread_arg *t = arg;
	void **p = malloc(BATCH * sizeof(*p));

	/* A thread that uses the blocks holds rights to them (new threads
	 * inherit them on hw, not on soft). */
	if (t->a->kind != A_GLIBC)
		mpk_set(mpk_heap_domain(t->a->h), MPK_RW);
	long rounds = t->n / BATCH > 0 ? t->n / BATCH : 1;
	double t0 = now_ns();

	for (long r = 0; r < rounds; r++) {
		for (int i = 0; i < BATCH; i++) {
			p[i] = a_malloc(t->a, small_sizes[(i * 7 + r) & 7]);
			*(volatile char *)p[i] = 1;
		}
		for (int i = 0; i < BATCH; i++)
			a_free(t->a, p[(i * 389) % BATCH]);
	}
	t->ns = (now_ns() - t0) / (rounds * BATCH);
	free(p);
	return NULL;
}

/* Two threads on one heap (glibc: its per-thread arenas), or each on a
 * heap of its own in the same domain (a->h2 set). */
static double w_threads(struct alloc *a, long n)
{
	pthread_t th[2];
	struct alloc own = { a->kind, a->h2 ? a->h2 : a->h, NULL };
	struct thread_arg arg[2] = { { a, n, 0 }, { &own, n, 0 } };

	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, thread_batch, &arg[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	/* pairs per second of the process, as ns per pair */
	return 1.0 / (1.0 / arg[0].ns + 1.0 / arg[1].ns);
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
		mpk_secret_readwrite(k);
		k[0]++;
		mpk_secret_noaccess(k);
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
	R_PAIRS, R_BATCH, R_THREADS, R_THREADS2, /* heap: ns per malloc+free pair */
	R_GUARDED,
	R_VAULT_AF, R_VAULT_OC, R_VAULT_WITH, R_VAULT_VS, R_VAULT_LK,
	R_COUNT
};

struct result {
	int ok;
	int backend;
	int meta_closed;
	double v[R_COUNT];
	char err[120];
};

static double med_of(double (*f)(struct alloc *, long), struct alloc *a, long n)
{
	double v[MAXRUNS];
	f(a, n / 10); /* warm up */
	for (int r = 0; r < runs; r++)
		v[r] = f(a, n);
	return median(v, runs);
}

static double med_vault(double (*f)(mpk_domain *, long), mpk_domain *d, long n)
{
	double v[MAXRUNS];
	f(d, n / 10);
	for (int r = 0; r < runs; r++)
		v[r] = f(d, n);
	return median(v, runs);
}

/* What one variant measures: glibc (kind A_GLIBC) or mpkit; heap_only
 * for the metadata mode that is not the default. */
static void measure(int kind, int heap_only, struct result *res)
{
	struct alloc a = { kind, NULL, NULL };
	mpk_domain *d = NULL;

	if (kind != A_GLIBC) {
		res->backend = mpk_backend();
		if (res->backend < 0 || !(d = mpk_domain_create("bench-heap", MPK_RW, 0)) ||
		    !(a.h = mpk_heap_create(d, 0))) {
			snprintf(res->err, sizeof(res->err), "heap: %s", strerror(errno));
			return;
		}
		struct mpk_heap_stats st;
		mpk_heap_stats_get(a.h, &st);
		res->meta_closed = st.meta_closed;
	}
	/* The domain-switching soft variant is slow: less work. */
	double k = (kind != A_GLIBC && res->meta_closed && res->backend == MPK_BACKEND_SOFT) ? 0.002 : 1;
	res->v[R_PAIRS] = med_of(w_pairs, &a, iters((long)(2000000 * k)));
	res->v[R_BATCH] = med_of(w_batch, &a, iters((long)(2000000 * k)));
	res->v[R_THREADS] = med_of(w_threads, &a, iters((long)(1000000 * k)));
	if (kind != A_GLIBC && (a.h2 = mpk_heap_create(d, 0))) {
		res->v[R_THREADS2] = med_of(w_threads, &a, iters((long)(1000000 * k)));
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
		res->v[R_GUARDED] = med_of(w_pairs, &g, iters(20000));
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
	pid_t pid = fork();
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
	if (pid < 0 || read(fds[0], res, sizeof(*res)) != (ssize_t)sizeof(*res))
		snprintf(res->err, sizeof(res->err), "the child failed");
	close(fds[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
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
	printf("libsodium %s, glibc %s; median of %d runs\n\n", sodium_version_string(),
	       gnu_get_libc_version(), runs);
#else
	printf("built without libsodium: its rows are missing; median of %d runs\n\n", runs);
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

int main(int argc, char **argv)
{
	struct result glibc, dflt, other;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			scale = 0.1;
			runs = 3;
		} else if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
			runs = atoi(argv[++i]);
			if (runs < 1 || runs > MAXRUNS) {
				fprintf(stderr, "--runs: 1..%d\n", MAXRUNS);
				return 2;
			}
		} else {
			fprintf(stderr, "usage: %s [--quick] [--runs N]\n", argv[0]);
			return 2;
		}
	}
#ifdef MPKIT_BENCH_SODIUM
	if (sodium_init() < 0) {
		fprintf(stderr, "sodium_init failed\n");
		return 1;
	}
#endif
	printf("mpkit-bench-alloc: heaps against glibc malloc, vaults against libsodium\n");
	machine();
	fflush(stdout);
	variant(A_GLIBC, NULL, 0, &glibc);
	variant(A_HEAP, "auto", 0, &dflt);
	variant(A_HEAP, dflt.meta_closed ? "open" : "closed", 1, &other);
	for (struct result *r = &glibc; r; r = r == &glibc ? &dflt : r == &dflt ? &other : NULL)
		if (!r->ok) {
			printf("a variant failed: %s\n", r->err);
			return 1;
		}
	struct result *o = dflt.meta_closed ? &other : &dflt;
	struct result *c = dflt.meta_closed ? &dflt : &other;
	const char *dflt_o = dflt.meta_closed ? "" : " (the default here)";
	const char *dflt_c = dflt.meta_closed ? " (the default here)" : "";
	char what[96];

	printf("heap: small blocks (16..256 bytes), ns per malloc+free   ratio: glibc time / this\n");
	static const char *wl[] = {
		"one at a time", "1000 live, freed in another order",
		"two threads, one heap (per process)", "two threads, a heap each (per process)",
	};
	for (int w = R_PAIRS; w <= R_THREADS2; w++) {
		int ref = w == R_THREADS2 ? R_THREADS : w; /* glibc has one way */
		printf(" %s\n", wl[w]);
		row("glibc malloc/free", glibc.v[ref], glibc.v[ref], "x");
		snprintf(what, sizeof(what), "mpk_heap, metadata open%s", dflt_o);
		row(what, o->v[w], glibc.v[ref], "x");
		snprintf(what, sizeof(what), "mpk_heap, metadata closed%s", dflt_c);
		row(what, c->v[w], glibc.v[ref], "x");
	}
	printf(" guarded heap (MPK_HEAP_GUARDED: pages and guard pages per block)\n");
	row("mpk_heap guarded, one at a time", dflt.v[R_GUARDED], glibc.v[R_PAIRS], "x");

	printf("\nvault: 32-byte secrets   ratio: libsodium time / this (above 1: faster)\n");
	row("sodium_malloc + sodium_free", glibc.v[R_VAULT_AF], glibc.v[R_VAULT_AF], "x");
	row("mpk_secret_alloc + mpk_secret_free", dflt.v[R_VAULT_AF], glibc.v[R_VAULT_AF], "x");
	row("sodium_mprotect_readwrite + _noaccess", glibc.v[R_VAULT_OC], glibc.v[R_VAULT_OC], "x");
	row("mpk_secret_readwrite + mpk_secret_noaccess", dflt.v[R_VAULT_OC], glibc.v[R_VAULT_OC], "x");
	row("MPK_WITH(keys, MPK_RW) { }", dflt.v[R_VAULT_WITH], glibc.v[R_VAULT_OC], "x");
	printf(" per secret, %d live:            address space      locked\n", NKEYS);
	printf("  %-30s %10.0f B %10.0f B\n", "sodium_malloc(32)", glibc.v[R_VAULT_VS], glibc.v[R_VAULT_LK]);
	printf("  %-30s %10.0f B %10.0f B\n", "mpk_secret_alloc(keys, 32)", dflt.v[R_VAULT_VS],
	       dflt.v[R_VAULT_LK]);
	printf("  (mpkit reserves address space a 1 MiB chunk at a time and locks only the pages in use)\n");
	return 0;
}
