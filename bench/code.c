/* SPDX-License-Identifier: MIT */
/*
 * mpkit-bench-code: JIT patching and watchpoints, side by side with the
 * mprotect() way of doing each, in one run.
 *
 *   patch+run   write a new immediate into a function, then call it:
 *               mpk       MPK_WITH(jit, MPK_RW) around the write
 *                         (mpk_code_alloc; hw: one WRPKRU each way)
 *               mprotect  mprotect(RW), write, mprotect(RX): W^X flipping
 *               rwx       no protection at all (the floor)
 *   watched write  one store to a watched 8-byte variable, reported and
 *               completed:
 *               mpk_watch  (hw: PKRU in the frame, trap flag; soft:
 *                          mprotect + trap flag)
 *               mprotect   a hand-made watcher: SIGSEGV handler
 *                          mprotect(RW) + trap flag, SIGTRAP handler
 *                          mprotect(R)
 *               plain      an unwatched store
 *
 * Medians of 7 runs; ns per operation, operations per second and the
 * ratio to mpkit's row.  On a CPU without PKU the mpk rows run on the soft
 * backend and say so.  A debugger's hardware watchpoints (x86 debug
 * registers) cost one trap per write too, but there are 4 of them, each
 * covering at most 8 aligned bytes: see docs/watch.md.
 *
 *   mpkit-bench-code [--quick]
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <mpkit.h>

#include "timing.h"

#define RUNS 7

static long iters = 200000;

typedef void (*op_fn)(long n);

/* Median ns per operation of op over RUNS runs of n. */
static double measure(op_fn op, long n)
{
	double v[RUNS];
	op(n / 10 + 1); /* warm up */
	for (int r = 0; r < RUNS; r++) {
		double t = now_ns();
		op(n);
		v[r] = (now_ns() - t) / (double)n;
	}
	return median(v, RUNS);
}

static void row(const char *name, double ns, double base)
{
	printf("  %-40s %10.1f ns %14.0f /s %9.2fx\n", name, ns, 1e9 / ns, ns / base);
}

/* ---- patch + run ---- */

typedef int (*ret_fn)(void);
static mpk_domain *jit;
static uint8_t *code, *flip, *rwx;
static volatile int sink;

static void emit(uint8_t *p, uint32_t v)
{
	p[0] = 0xb8; /* mov eax, imm32; ret */
	memcpy(p + 1, &v, 4);
	p[5] = 0xc3;
}

static void patch_mpk(long n)
{
	for (long i = 0; i < n; i++) {
		MPK_WITH(jit, MPK_RW) {
			memcpy(code + 1, &i, 4);
		}
		sink = ((ret_fn)code)();
	}
}

static void patch_mprotect(long n)
{
	for (long i = 0; i < n; i++) {
		mprotect(flip, 4096, PROT_READ | PROT_WRITE);
		memcpy(flip + 1, &i, 4);
		mprotect(flip, 4096, PROT_READ | PROT_EXEC);
		sink = ((ret_fn)flip)();
	}
}

static void patch_rwx(long n)
{
	for (long i = 0; i < n; i++) {
		memcpy(rwx + 1, &i, 4);
		sink = ((ret_fn)rwx)();
	}
}

/* ---- watched writes ---- */

static uint8_t *wpage;
static volatile uint64_t *wvar;
static volatile long reported;

static void on_watch(const struct mpk_watch_hit *h, void *arg)
{
	(void)h;
	(void)arg;
	reported++;
}

static void store_loop(long n)
{
	for (long i = 0; i < n; i++)
		*wvar = (uint64_t)i;
}

/* The hand-made mprotect watcher. */
static void mp_segv(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	(void)sig;
	if ((uintptr_t)si->si_addr - (uintptr_t)wvar < 8)
		reported++;
	mprotect(wpage, 4096, PROT_READ | PROT_WRITE);
	uc->uc_mcontext.gregs[REG_EFL] |= 0x100;
}

static void mp_trap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	(void)sig;
	(void)si;
	mprotect(wpage, 4096, PROT_READ);
	uc->uc_mcontext.gregs[REG_EFL] &= ~0x100;
}

static double mprotect_watcher(long n)
{
	struct sigaction sa, old_segv, old_trap;

	memset(&sa, 0, sizeof(sa));
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sa.sa_sigaction = mp_segv;
	sigaction(SIGSEGV, &sa, &old_segv);
	sa.sa_sigaction = mp_trap;
	sigaction(SIGTRAP, &sa, &old_trap);
	mprotect(wpage, 4096, PROT_READ);
	double ns = measure(store_loop, n);
	mprotect(wpage, 4096, PROT_READ | PROT_WRITE);
	sigaction(SIGSEGV, &old_segv, NULL);
	sigaction(SIGTRAP, &old_trap, NULL);
	return ns;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--quick"))
		iters = 20000;
	else if (argc > 1) {
		fprintf(stderr, "usage: mpkit-bench-code [--quick]\n");
		return 2;
	}
	const char *backend = mpk_backend_name(mpk_backend());
	if (!backend) {
		perror("mpkit-bench-code: mpk_backend");
		return 1;
	}
	jit = mpk_domain_create("jit", MPK_READ, MPK_DOMAIN_SHARED);
	code = jit ? mpk_code_alloc(jit, 4096) : NULL;
	flip = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	rwx = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	wpage = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!code || flip == MAP_FAILED || rwx == MAP_FAILED || wpage == MAP_FAILED) {
		perror("mpkit-bench-code: setup");
		return 1;
	}
	MPK_WITH(jit, MPK_RW) {
		emit(code, 0);
	}
	emit(flip, 0);
	mprotect(flip, 4096, PROT_READ | PROT_EXEC);
	emit(rwx, 0);
	wvar = (volatile uint64_t *)(wpage + 256);

	printf("mpkit-bench-code %s: backend %s%s, %ld operations per run, median of %d runs\n",
	       mpk_version(), backend,
	       mpk_domain_key(jit) >= 0 ? " (hardware keys)"
					 : " (no keys: mpk rows are mprotect() underneath)",
	       iters, RUNS);
	printf("\npatch + run (write an immediate, call the function)\n");
	double m = measure(patch_mpk, iters);
	row("mpk_code_alloc + MPK_WITH(RW)", m, m);
	row("mprotect RW/RX flipping (W^X)", measure(patch_mprotect, iters), m);
	row("rwx page, no protection", measure(patch_rwx, iters), m);

	long wn = iters / 4;
	printf("\nwatched write (one store to a watched 8-byte variable)\n");
	reported = 0;
	double mp = mprotect_watcher(wn);
	long mp_reported = reported;
	int id = mpk_watch((void *)wvar, 8, MPK_WATCH_WRITE, on_watch, NULL);
	if (id < 0) {
		perror("mpkit-bench-code: mpk_watch");
		return 1;
	}
	reported = 0;
	double w = measure(store_loop, wn);
	long w_reported = reported;
	mpk_unwatch(id);
	row("mpk_watch", w, w);
	row("mprotect watcher (SIGSEGV + trap flag)", mp, w);
	row("unwatched store", measure(store_loop, iters), w);
	long want = (wn / 10 + 1) + RUNS * wn;
	printf("  writes reported: mpk_watch %ld, mprotect watcher %ld (of %ld each)\n", w_reported,
	       mp_reported, want);
	printf("  a debugger's hardware watchpoints: at most 4 ranges of <= 8 bytes (x86 debug\n"
	       "  registers), any number of pages here (64 ranges, 256 pages)\n");
	return w_reported == want && mp_reported == want ? 0 : 1;
}
