/* SPDX-License-Identifier: MIT */
/*
 * mpkit-bench-vault: secrets side by side, in one run: 32-byte alloc+free
 * in 1, 2, 4 and 8 threads for mpkit's vault, libsodium's sodium_malloc and
 * OpenSSL's secure heap (CRYPTO_secure_malloc_init), and opening and
 * closing one secret against libsodium's sodium_mprotect pair.  A library
 * the build did not find is a row that says so.  The backend is the
 * process's (MPKIT_BACKEND picks one).  Public API only.
 *
 *   mpkit-bench-vault [--smoke] [--reps N] [--quiet]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpkit.h>

#include "options.h"
#include "output.h"
#include "timing.h"
#ifdef MPKIT_BENCH_SODIUM
#include <sodium.h>
#endif
#ifdef MPKIT_BENCH_OPENSSL
#include <openssl/crypto.h>
#endif

#define MAXRUNS 15
#define MAXT 8
#define NT 4 /* the thread counts of the alloc+free rows */

static const int threads[NT] = { 1, 2, 4, 8 };
static const char *prog = "mpkit-bench-vault";
static int runs = 5;
static long per_thread = 200000; /* alloc+free pairs per row, shared by its threads */
static long oc_iters = 20000;
static bool smoke;
static int quiet;
static mpk_domain *dom;
static const char *skip_openssl = "built without OpenSSL's libcrypto (pkg-config found none): "
				  "tools/deps.sh test installs libssl-dev";

enum { M_MPK_OPEN, M_MPK_CLOSED, M_SODIUM, M_OPENSSL, NM };
static const char *const mname[NM] = {
	"mpk_secret_alloc + _free, domain open",
	"mpk_secret_alloc + _free, closed (free opens)",
	"sodium_malloc + sodium_free",
	"OPENSSL_secure_malloc + _free",
};

static void die(const char *call)
{
	perror(call);
	exit(1);
}

/* One thread's share of a method: n alloc+free pairs, each secret written. */
static void work(int m, long n)
{
	switch (m) {
	case M_MPK_OPEN:
		/* A window held for the batch, as a handshake's temporaries. */
		MPK_WITH(dom, MPK_RW) {
			for (long i = 0; i < n; i++) {
				unsigned char *k = mpk_secret_alloc(dom, 32);
				if (!k)
					die("mpk_secret_alloc");
				k[0] = 1;
				if (mpk_secret_free(k))
					die("mpk_secret_free");
			}
		}
		break;
	case M_MPK_CLOSED:
		for (long i = 0; i < n; i++) {
			unsigned char *k = mpk_secret_alloc(dom, 32);
			if (!k || mpk_secret_free(k))
				die("mpk_secret_alloc/free");
		}
		break;
#ifdef MPKIT_BENCH_SODIUM
	case M_SODIUM:
		for (long i = 0; i < n; i++) {
			unsigned char *k = sodium_malloc(32);
			if (!k)
				die("sodium_malloc");
			k[0] = 1;
			sodium_free(k);
		}
		break;
#endif
#ifdef MPKIT_BENCH_OPENSSL
	case M_OPENSSL:
		for (long i = 0; i < n; i++) {
			unsigned char *k = OPENSSL_secure_malloc(32);
			if (!k)
				die("OPENSSL_secure_malloc");
			k[0] = 1;
			OPENSSL_secure_free(k);
		}
		break;
#endif
	}
}

struct job {
	int m;
	long n;
	pthread_barrier_t *bar;
	double cpu[MAXT];
	int next;
};

static void *thread_main(void *arg)
{
	struct job *j = arg;
	int me = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);

	pthread_barrier_wait(j->bar);
	double t = cpu_ns();
	work(j->m, j->n);
	j->cpu[me] = cpu_ns() - t;
	return NULL;
}

/* CPU-ns per alloc+free: the CPU time of nt threads doing n pairs each
 * (waiting for a lock costs its futex calls), over all pairs; flat across
 * thread counts: it scales. */
static double run_threads(int m, int nt, long n)
{
	pthread_t th[MAXT];
	pthread_barrier_t bar;
	struct job j = { .m = m, .n = n, .bar = &bar };

	if (pthread_barrier_init(&bar, NULL, (unsigned)nt + 1))
		die("pthread_barrier_init");
	for (int i = 0; i < nt; i++)
		if (pthread_create(&th[i], NULL, thread_main, &j))
			die("pthread_create");
	pthread_barrier_wait(&bar);
	/* All joined before any is read: cpu[] slots go by arrival, not by th[]. */
	for (int i = 0; i < nt; i++)
		pthread_join(th[i], NULL);
	double t = 0;
	for (int i = 0; i < nt; i++)
		t += j.cpu[i];
	pthread_barrier_destroy(&bar);
	return t / ((double)nt * n);
}

enum { O_SECRET, O_WITH, O_SODIUM, NO };
static const char *const oname[NO] = {
	"mpk_secret_readonly + mpk_secret_noaccess",
	"MPK_WITH(domain, MPK_READ) { read }",
	"sodium_mprotect_readonly + _noaccess",
};

static volatile unsigned char sink;

static double open_close(int o, long n)
{
	double t = 0;

	if (o == O_SECRET || o == O_WITH) {
		unsigned char *k = mpk_secret_alloc(dom, 32);
		if (!k)
			die("mpk_secret_alloc");
		t = cpu_ns();
		for (long i = 0; i < n; i++) {
			if (o == O_WITH) {
				MPK_WITH(dom, MPK_READ) {
					sink = k[0];
				}
				continue;
			}
			if (mpk_secret_readonly(k))
				die("mpk_secret_readonly");
			sink = k[0];
			if (mpk_secret_noaccess(k))
				die("mpk_secret_noaccess");
		}
		t = (cpu_ns() - t) / n;
		if (mpk_secret_free(k))
			die("mpk_secret_free");
	}
#ifdef MPKIT_BENCH_SODIUM
	if (o == O_SODIUM) {
		unsigned char *k = sodium_malloc(32);
		if (!k)
			die("sodium_malloc");
		sodium_mprotect_noaccess(k);
		t = cpu_ns();
		for (long i = 0; i < n; i++) {
			sodium_mprotect_readonly(k);
			sink = k[0];
			sodium_mprotect_noaccess(k);
		}
		t = (cpu_ns() - t) / n;
		sodium_free(k);
	}
#endif
	return t;
}

/* Whether open+close method o has no figures here (built without it). */
static bool oc_missing(int o)
{
#ifndef MPKIT_BENCH_SODIUM
	if (o == O_SODIUM)
		return true;
#endif
	(void)o;
	return false;
}

/* Why a method has no figures here, or NULL. */
static const char *missing(int m)
{
#ifndef MPKIT_BENCH_SODIUM
	if (m == M_SODIUM)
		return "built without libsodium: tools/deps.sh test installs libsodium-dev";
#endif
	if (m == M_OPENSSL)
		return skip_openssl;
	return NULL;
}

/* Reads the options into runs and smoke: -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv)
{
	int sm = 0, given = 0;
	const struct bench_opt opts[] = {
		{ "reps", 0, BO_INT, &runs, "N", "runs, each figure their median (default 5)", 1, MAXRUNS,
		  .given = &given },
		{ "smoke", 0, BO_FLAG, &sm, NULL, "a correctness run: tiny counts, one run; the timings mean\n"
		  "nothing" },
		{ "quiet", 'q', BO_FLAG, &quiet, NULL, "no progress on stderr" },
		{ "runs", 0, BO_INT, &runs, "N", NULL, 1, MAXRUNS, .given = &given },
		{ NULL, 0 },
	};
	const struct bench_cli cli = {
		prog = bench_prog(argv[0], "vault"),
		"Secret alloc+free in 1, 2, 4, 8 threads (mpkit, libsodium, OpenSSL's secure\n"
		"heap) and open+close of a secret against libsodium's sodium_mprotect pair.\n",
		NULL, opts,
	};
	int rc = bench_options(&cli, argc, argv);

	smoke = sm;
	if (smoke) {
		runs = given ? runs : 1;
		per_thread = 200;
		oc_iters = 20;
	}
	return rc;
}

/* The libraries compared and the domain the secrets live in. */
static void setup(void)
{
#ifdef MPKIT_BENCH_SODIUM
	if (sodium_init() < 0)
		die("sodium_init");
#endif
#ifdef MPKIT_BENCH_OPENSSL
	/* 1 MiB, locked, blocks of 16 bytes and up. */
	if (CRYPTO_secure_malloc_init(1 << 20, 16) == 0)
		skip_openssl = "CRYPTO_secure_malloc_init failed (locked memory: ulimit -l)";
	else
		skip_openssl = NULL;
#endif
	if (!(dom = mpk_domain_create("bench-vault", MPK_NONE, 0)))
		die("mpk_domain_create");
}

/* af[m][t]: CPU-ns per alloc+free of method m in threads[t] threads. */
static void run_alloc(double af[NM][NT])
{
	for (int m = 0; m < NM; m++)
		for (int t = 0; t < NT; t++) {
			double v[MAXRUNS];
			if (missing(m)) {
				af[m][t] = 0;
				continue;
			}
			/* A system call or two per pair: fewer pairs. */
			long n = per_thread / (m == M_MPK_CLOSED || m == M_SODIUM ? 20 : 1);
			bench_progress("alloc+free: %s, %d thread%s", mname[m], threads[t], threads[t] == 1 ? "" : "s");
			for (int r = 0; r < runs; r++)
				v[r] = run_threads(m, threads[t], n / threads[t]);
			af[m][t] = median(v, runs);
		}
}

/* oc[o]: CPU-ns per open+close of method o.  The methods take turns
 * within each run, and a different one goes first each run: the machine's
 * speed drifts, and whichever ran last would otherwise be favoured. */
static void run_open_close(double oc[NO])
{
	double v[NO][MAXRUNS];

	for (int r = 0; r < runs; r++)
		for (int k = 0; k < NO; k++) {
			int o = (r + k) % NO;
			bench_progress("open+close: run %d of %d", r + 1, runs);
			if (!oc_missing(o))
				v[o][r] = open_close(o, oc_iters);
		}
	for (int o = 0; o < NO; o++)
		oc[o] = oc_missing(o) ? 0 : median(v[o], runs);
}

static void print_alloc(double af[NM][NT])
{
	printf("32-byte alloc+free, ns of CPU per pair (the threads' CPU time / pairs: flat\n"
	       "across a row scales); (x) OpenSSL's time / this, above 1: faster\n");
	printf("  %-46s %14s %14s %14s %14s\n", "", "1 thread", "2 threads", "4 threads", "8 threads");
	double *ref = missing(M_OPENSSL) ? NULL : af[M_OPENSSL];
	for (int m = 0; m < NM; m++) {
		printf("  %-46s", mname[m]);
		if (missing(m)) {
			printf(" skipped: %s\n", missing(m));
			continue;
		}
		for (int t = 0; t < NT; t++) {
			if (ref && af[m][t] > 0)
				printf(" %7.0f (%4.2fx)", af[m][t], ref[t] / af[m][t]);
			else
				printf(" %14.0f", af[m][t]);
		}
		printf("\n");
	}
}

static void print_open_close(const double oc[NO])
{
	printf("\nopen+close of one secret, ns of CPU; (x) libsodium's time / this, above 1: faster\n");
	for (int o = 0; o < NO; o++) {
		printf("  %-46s", oname[o]);
		if (oc_missing(o)) {
			printf(" skipped: built without libsodium\n");
			continue;
		}
		if (oc[O_SODIUM] > 0)
			printf(" %9.0f (%4.2fx)\n", oc[o], oc[O_SODIUM] / oc[o]);
		else
			printf(" %9.0f\n", oc[o]);
	}
}

int main(int argc, char **argv)
{
	double af[NM][NT], oc[NO];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct mpk_info info;
	int rc = parse_args(argc, argv);

	if (rc >= 0)
		return rc;
	if (cpus < 1)
		cpus = 1;
	setup();
	if (mpk_info(&info))
		die("mpk_info");

	bench_progress_start(quiet);
	run_alloc(af);
	run_open_close(oc);
	bench_progress_done();

	printf("%s: secrets, %s backend, %ld CPUs; median of %d runs%s\n\n", prog,
	       info.backend == MPK_BACKEND_HW ? "hw" : "soft", cpus, runs,
	       smoke ? " (--smoke: a correctness run, the timings mean nothing)" : "");
	print_alloc(af);
	print_open_close(oc);
	if (mpk_domain_destroy(dom))
		die("mpk_domain_destroy");
	return bench_output_ok(prog) ? 0 : 1;
}
