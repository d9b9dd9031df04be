/* SPDX-License-Identifier: MIT */
/*
 * mpkit at scale (`mpkit bench --scale`, `make bench-scale`): address
 * lookups and fault + retry at 10 / 1,000 / 100,000 regions, a no-change
 * mpk_set() at 1/2/4/8 threads, rights save + restore at 1/15/1,000
 * domains, one broadcast per thread, and the fast path's instruction
 * counts from the disassembly.  Regions past the few mapped ones are
 * registered over carved window units (vm.max_map_count allows no 100,000
 * mappings); they are the same table entries.  A table, never a test:
 * timings on a loaded 2-CPU machine vary by tens of percent.  --smoke is
 * the correctness run (few iterations, every result checked): exit 1 if a
 * lookup, a retried fault or a restore came out wrong.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bcast.h"
#include "bench.h"
#include "options.h"
#include "output.h"
#include "timing.h"
#include "mpkit.h"
/* Carving window units and registering regions there: internal, from
 * libmpkit.a. */
#include "../src/core/testing.h"

static int counts[3] = { 10, 1000, 100000 };
static void *units[100000];
static volatile long sink;
static bool smoke;
static int failed;
/* Iterations: timed run, and --smoke. */
#define IT(timed, quick) (smoke ? (quick) : (timed))

static void wrong(const char *what, int at)
{
	fprintf(stderr, "mpkit bench --scale: %s wrong (at %d)\n", what, at);
	failed = 1;
}

/* n regions of bulk (rights never change, so soft never mprotects them). */
static void regions(mpk_domain *bulk, int from, int to, bool add)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	for (int i = from; i < to; i++) {
		if (add) {
			units[i] = mpk__window_carve(page, 0);
			if (!units[i] || mpk__region_register(bulk, units[i], page, true))
				exit(1);
		} else {
			mpk__region_register(bulk, units[i], page, false);
			mpk__window_uncarve(units[i], page);
		}
	}
}

static double lookup_ns(mpk_domain *bulk, int n)
{
	const int ITER = IT(2000000, 2000);
	unsigned x = 1;
	/* Every unit, its first and last byte, and the guard page after the
	 * newest (nobody's): checked once, outside the timing. */
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	for (int i = 0; i < n; i++)
		if (mpk_domain_of(units[i]) != bulk || mpk_domain_of((char *)units[i] + page - 1) != bulk)
			wrong("mpk_domain_of", i);
	double t0 = cpu_ns();
	for (int i = 0; i < ITER; i++) {
		x = x * 1103515245u + 12345u;
		sink += (long)mpk_domain_of((char *)units[(x >> 8) % (unsigned)n] + 100);
	}
	return (cpu_ns() - t0) / ITER;
}

static long nfaults;

static int on_fault(const struct mpk_fault *f, void *arg)
{
	(void)arg;
	nfaults++;
	if (mpk_set(f->domain, MPK_RW))
		return MPK_FAULT_ABORT;
	return MPK_FAULT_RETRY;
}

static double fault_us(mpk_domain *d, volatile char *p)
{
	const int ITER = IT(2000, 20);
	long n0 = nfaults;
	double t0 = cpu_ns();
	for (int i = 0; i < ITER; i++) {
		if (mpk_set(d, MPK_NONE))
			wrong("mpk_set", i);
		p[0] = (char)i; /* faults; the callback opens; retried */
	}
	double us = (cpu_ns() - t0) / ITER / 1000;
	if (nfaults - n0 != ITER || p[0] != (char)(ITER - 1))
		wrong("fault + retry", (int)(nfaults - n0));
	return us;
}

static mpk_domain *nc_dom;
static pthread_barrier_t bar;
static double nc_res[8];

static void *nochange(void *arg)
{
	const int ITER = IT(2000000, 2000);
	int id = (int)(long)arg, rc = mpk_set(nc_dom, MPK_RW);
	pthread_barrier_wait(&bar);
	double t0 = cpu_ns();
	for (int i = 0; i < ITER; i++)
		rc |= mpk_set(nc_dom, MPK_RW);
	nc_res[id] = (cpu_ns() - t0) / ITER;
	if (rc || mpk_get(nc_dom) != MPK_RW)
		wrong("no-change mpk_set", id);
	return NULL;
}

static double nochange_ns(int threads)
{
	pthread_t t[8];
	double sum = 0;
	pthread_barrier_init(&bar, NULL, (unsigned)threads);
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, nochange, (void *)(long)i);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&bar);
	for (int i = 0; i < threads; i++)
		sum += nc_res[i];
	return sum / threads;
}

/* ndom domains, the calling thread holding READ to held of them (none
 * to the rest): a save + restore costs what is held, not what exists.
 * changed: one save, then each round closes one held domain and
 * restores, which reopens it: the restore cannot take its nothing-moved
 * shortcut and looks at every held domain (these domains have no memory,
 * so no mprotect() is timed, only the walk). */
static double saverestore_us(int ndom, int held, bool changed)
{
	const int ITER = IT(2000, 5);
	mpk_domain **d = calloc((size_t)ndom, sizeof(*d));
	char name[32];
	mpk_rights_t r;
	for (int i = 0; i < ndom; i++) {
		snprintf(name, sizeof(name), "sr%d", i);
		d[i] = mpk_domain_create(name, i < held ? MPK_READ : MPK_NONE, 0);
	}
	int rc = 0;
	if (changed)
		rc |= mpk_rights_save(&r);
	double t0 = cpu_ns();
	for (int i = 0; i < ITER; i++) {
		if (changed) {
			rc |= mpk_set(d[i % held], MPK_NONE);
			rc |= mpk_rights_restore(&r);
			continue;
		}
		rc |= mpk_rights_save(&r);
		rc |= mpk_rights_restore(&r);
		mpk_rights_dispose(&r);
	}
	double us = (cpu_ns() - t0) / ITER / 1000;
	if (changed)
		mpk_rights_dispose(&r);
	/* Closed all, then the save restored: the held ones reopen. */
	if (mpk_rights_save(&r))
		rc = -1;
	for (int i = 0; i < held; i++)
		rc |= mpk_set(d[i], MPK_NONE);
	rc |= mpk_rights_restore(&r);
	mpk_rights_dispose(&r);
	for (int i = 0; i < ndom; i++)
		if (rc || mpk_get(d[i]) != (i < held ? MPK_READ : MPK_NONE))
			wrong("save + restore", i);
	for (int i = 0; i < ndom; i++)
		mpk_domain_destroy(d[i]);
	free(d);
	return us;
}

static const char *prog = "mpkit-bench-scale";

/* The figures, by region count, thread count and domain count. */
struct figures {
	double lk[3], ft[3];       /* lookup ns, fault + retry us */
	double nc[4];              /* no-change mpk_set ns */
	struct bench_bcast bc[4];
	double sr[3], sa[3], sc[3]; /* save + restore us: <= 3 held, all, 1 closed */
};

static const int thr[4] = { 1, 2, 4, 8 }, doms[3] = { 1, 15, 1000 };

static int quiet;

/* The options: -1 to go on, or the exit status. */
static int parse_args(int argc, char **argv)
{
	int sm = 0;
	const struct bench_opt opts[] = {
		{ "smoke", 0, BO_FLAG, &sm, NULL, "correctness run: 10/100/1,000 regions, a few iterations,\n"
		  "every result checked (exit 1 if one is wrong); the timings\n"
		  "then mean nothing" },
		{ "quiet", 'q', BO_FLAG, &quiet, NULL, "no progress on stderr" },
		{ NULL, 0 },
	};
	const struct bench_cli cli = {
		prog = bench_prog(argv[0], "--scale"),
		"\n"
		"mpkit at scale, side by side in one run: mpk_domain_of() and a fault +\n"
		"MPK_FAULT_RETRY at 10 / 1,000 / 100,000 regions, a no-change mpk_set() at\n"
		"1/2/4/8 threads, mpk_rights_save()+restore() at 1/15/1,000 domains (3\n"
		"held, all held, and all held with one closed before each restore), one\n"
		"broadcast per thread (frame edit stubbed without keys), and the fast\n"
		"path's instruction counts from the disassembly.\n",
		NULL, opts,
	};
	int rc = bench_options(&cli, argc, argv);

	smoke = sm;
	if (smoke)
		counts[1] = 100, counts[2] = 1000;
	return rc;
}

/* Everything, in one run: 0, or -1 when mpkit could not be set up. */
static int measure(struct figures *x, mpk_domain **bulk)
{
	if (mpk_init())
		return -1;
	*bulk = mpk_domain_create("bulk", MPK_RW, 0);
	mpk_domain *f = mpk_domain_create("fault", MPK_RW, 0);
	volatile char *p = mpk_alloc(f, 1);
	if (!*bulk || !f || !p || mpk_fault_handler_install(on_fault, NULL))
		return -1;
	for (int c = 0, have = 0; c < 3; c++) {
		bench_progress("%d regions", counts[c]);
		regions(*bulk, have, counts[c], true);
		have = counts[c];
		x->lk[c] = lookup_ns(*bulk, have);
		x->ft[c] = fault_us(f, p);
	}
	nc_dom = mpk_domain_create("nochange", MPK_RW, MPK_DOMAIN_SHARED);
	bench_progress("no-change mpk_set");
	for (int i = 0; i < 4; i++)
		x->nc[i] = nochange_ns(thr[i]);
	for (int i = 0; i < 3; i++) {
		bench_progress("save + restore, %d domains", doms[i]);
		x->sr[i] = saverestore_us(doms[i], 1 + 2 * (i > 0), false); /* 1, 3, 3 held */
		x->sa[i] = saverestore_us(doms[i], doms[i], false);
		x->sc[i] = saverestore_us(doms[i], doms[i], true);
	}
	memset(x->bc, 0, sizeof(x->bc));
#ifndef __SANITIZE_THREAD__ /* TSan holds signals to threads blocked in read() */
	mpk__broadcast_stub(mpk_backend() != MPK_BACKEND_HW);
	bench_progress("broadcasts");
	for (int i = 0; i < 4; i++)
		if (bench_bcast_measure(thr[i], IT(100, 2), IT(9, 1), &x->bc[i]))
			wrong("broadcast", thr[i]);
	mpk__broadcast_stub(0);
#endif
	return 0;
}

static void print_table(const struct figures *x)
{
	const double *lk = x->lk, *ft = x->ft, *nc = x->nc, *sr = x->sr, *sa = x->sa, *sc = x->sc;
	const struct bench_bcast *bc = x->bc;
	char h[3][16];

	printf("mpkit at scale, %s backend (timings in a VM under TCG mean nothing)\n%s\n",
	       mpk_backend_name(mpk_backend()), smoke ? "SMOKE RUN: few iterations, every result checked, timings mean nothing\n" : "");
	for (int i = 0; i < 3; i++) /* 1,000 */
		snprintf(h[i], sizeof(h[i]), counts[i] >= 1000 ? "%d,%03d" : "%.0d%d",
			 counts[i] / 1000, counts[i] % 1000);
	printf("%-30s %12s %12s %12s %10s\n", "regions", h[0], h[1], h[2], "last/first");
	printf("%-30s %9.1f ns %9.1f ns %9.1f ns %9.2fx\n", "mpk_domain_of", lk[0], lk[1], lk[2], lk[2] / lk[0]);
	printf("%-30s %9.2f us %9.2f us %9.2f us %9.2fx\n", "fault + retry", ft[0], ft[1], ft[2], ft[2] / ft[0]);
	printf("\n%-30s %12s %12s %12s %12s %10s\n", "threads", "1", "2", "4", "8", "8/1");
	printf("%-30s %9.1f ns %9.1f ns %9.1f ns %9.1f ns %9.2fx\n", "no-change mpk_set", nc[0], nc[1], nc[2], nc[3], nc[3] / nc[0]);
	printf("%-30s %9.2f us %9.2f us %9.2f us %9.2f us %9.2fx\n", "broadcast, per thread",
	       bc[0].us / 1, bc[1].us / 2, bc[2].us / 4, bc[3].us / 8, bc[3].us / 8 / bc[0].us);
	printf("%-30s %12.1f %12.1f %12.1f %12.1f %10s\n", "  signals per broadcast",
	       bc[0].signals, bc[1].signals, bc[2].signals, bc[3].signals, "");
	printf("%-30s %12.1f %12.1f %12.1f %12.1f %10s\n", "  its system calls",
	       bc[0].syscalls, bc[1].syscalls, bc[2].syscalls, bc[3].syscalls, "");
	printf("\n%-30s %12s %12s %12s %10s\n", "domains", "1", "15", "1,000", "1000/1");
	printf("%-30s %9.2f us %9.2f us %9.2f us %9.2fx\n", "save + restore, <= 3 held", sr[0], sr[1], sr[2], sr[2] / sr[0]);
	printf("%-30s %9.2f us %9.2f us %9.2f us %9.2fx\n", "save + restore, all held", sa[0], sa[1], sa[2], sa[2] / sa[0]);
	printf("%-30s %9.2f us %9.2f us %9.2f us %9.2fx\n", "1 closed + restore, all held", sc[0], sc[1], sc[2], sc[2] / sc[0]);
	if (mpk_backend() != MPK_BACKEND_HW)
		printf("(broadcast: the protocol with its frame edit stubbed, no keys here)\n");
}

static void print_fastpath(void)
{
	struct bench_fastpath fp;

	memset(&fp, 0, sizeof(fp));
	bench_fastpath_probe(&fp, NULL);
	printf("\nfast path (objdump of %s):\n", fp.file[0] ? fp.file : "the file that holds mpk_set");
	if (!fp.ok)
		printf("  %s\n", fp.why);
	for (int i = 0; fp.ok && i < 3; i++)
		if (fp.fn[i].found)
			printf("  %-10s %3d instructions, %d branches, %d calls\n",
			       fp.fn[i].name, fp.fn[i].insns, fp.fn[i].branches, fp.fn[i].calls);
}

int main(int argc, char **argv)
{
	struct figures x;
	mpk_domain *bulk = NULL;
	int rc = parse_args(argc, argv);

	if (rc >= 0)
		return rc;
	bench_progress_start(quiet);
	if (measure(&x, &bulk))
		return 1;
	bench_progress_done();
	print_table(&x);
	print_fastpath();
	regions(bulk, 0, counts[2], false);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "%s: writing the output failed\n", prog);
		return 1;
	}
	if (failed)
		fprintf(stderr, "%s: FAILED: a result above is wrong\n", prog);
	return failed;
}
