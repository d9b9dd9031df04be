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
 *               gdb        a gdb hardware watchpoint on the same kind of
 *                          variable, in a child run under
 *                          `gdb -batch` (watch -l, commands: silent,
 *                          continue), the child timing its own stores;
 *                          skipped with a message when gdb is absent or
 *                          cannot trace (gdb reports a change of value
 *                          only: every store here changes it)
 *               plain      an unwatched store
 *
 * Medians of 7 runs; ns per operation, operations per second and the
 * ratio to mpkit's row.  On a CPU without PKU the mpk rows run on the soft
 * backend and say so.  A debugger's hardware watchpoints (x86 debug
 * registers) cost one trap per write too, but there are 4 of them, each
 * covering at most 8 aligned bytes: see docs/watch.md.
 *
 *   mpkit-bench-code [--smoke]
 *   mpkit-bench-code --gdb-target N   (the child gdb runs)
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <mpkit.h>

#include "options.h"
#include "timing.h"

#define RUNS 7

static long iters = 200000;

typedef void (*op_fn)(long n);

/* Median ns per operation of op over RUNS runs of n. */
static const char *stage = ""; /* what is measured, for the progress */

static double measure(op_fn op, long n)
{
	double v[RUNS];
	op(n / 10 + 1); /* warm up */
	for (int r = 0; r < RUNS; r++) {
		bench_progress("%s, run %d of %d", stage, r + 1, RUNS);
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

/* ---- gdb ---- */

volatile uint64_t gdb_var;

/* The child: N stores to gdb_var, each a new value; ns per store. */
static int gdb_target(long n)
{
	double t = now_ns();
	for (long i = 1; i <= n; i++)
		gdb_var = (uint64_t)i;
	printf("gdb-target: %ld stores, %.1f ns per store\n", n, (now_ns() - t) / (double)n);
	return 0;
}

/* ns per watched store under gdb, or a negative number (*why says why);
 * *hits gets the hit count gdb reports. */
static double gdb_watcher(long n, long *hits, const char **why)
{
	char self[4096], cmd[4096 + 256], line[512], script[] = "/tmp/mpkit-bench-gdb-XXXXXX";
	double ns = -1;
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int fd = mkstemp(script);

	*hits = 0;
	*why = "gdb not found";
	if (system("command -v gdb >/dev/null 2>&1") != 0 || len < 0 || fd < 0) {
		if (fd >= 0)
			close(fd), unlink(script);
		return -1;
	}
	self[len] = 0;
	static const char text[] = "set pagination off\nset confirm off\nstart\n"
				   "watch -l *(long *)&gdb_var\ncommands\nsilent\ncontinue\nend\n"
				   "continue\ninfo watchpoints\n";
	FILE *f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "gdb -batch -nx -x %s --args '%s' --gdb-target %ld 2>&1", script,
		 self, n);
	FILE *p = popen(cmd, "r");
	bool hardware = false;
	*why = "gdb could not run the child";
	while (p && fgets(line, sizeof(line), p)) {
		char *h;
		hardware |= strstr(line, "Hardware watchpoint") != NULL;
		if (strstr(line, "gdb-target: "))
			sscanf(strstr(line, "gdb-target: "), "gdb-target: %*s stores, %lf", &ns);
		if ((h = strstr(line, "already hit ")))
			*hits = atol(h + 12);
	}
	if (p)
		pclose(p);
	unlink(script);
	if (ns > 0 && !hardware) {
		*why = "gdb fell back to a software watchpoint";
		return -1;
	}
	return ns;
}

/* The watched-write rows: mpk_watch, the mprotect watcher, gdb, an
 * unwatched store; 0, or 1 when a write went unreported. */
static int watch_rows(void)
{
	long wn = iters / 4;
	printf("\nwatched write (one store to a watched 8-byte variable)\n");
	stage = "watched write";
	bench_progress("%s: the mprotect watcher", stage);
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
	long gn = iters / 100 > 100 ? iters / 100 : 100, ghits;
	const char *why;
	bench_progress("%s: gdb", stage);
	double g = gdb_watcher(gn, &ghits, &why);
	bench_progress_done();
	if (g > 0)
		row("gdb hw watchpoint (4 x <= 8 bytes)", g, w);
	else
		printf("  %-40s skipped: %s\n", "gdb hw watchpoint", why);
	row("unwatched store", measure(store_loop, iters), w);
	long want = (wn / 10 + 1) + RUNS * wn;
	printf("  writes reported: mpk_watch %ld, mprotect watcher %ld (of %ld each)", w_reported,
	       mp_reported, want);
	if (g > 0)
		printf(", gdb %ld (of %ld, one run)", ghits, gn);
	printf("\n  a debugger's hardware watchpoints: at most 4 ranges of <= 8 bytes each (x86\n"
	       "  debug registers DR0-DR3); mpk_watch and the mprotect watcher: any number of\n"
	       "  pages (64 ranges, 256 pages)\n");
	return w_reported == want && mp_reported == want ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "--gdb-target"))
		return gdb_target(atol(argv[2]));
	int smoke = 0, rc = bench_smoke_options(argv[0], "JIT patching and watchpoints against mprotect.\n", argc, argv,
						&smoke);
	if (rc >= 0)
		return rc;
	if (smoke)
		iters = 20000;
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
	stage = "patch + run";
	double m = measure(patch_mpk, iters);
	row("mpk_code_alloc + MPK_WITH(RW)", m, m);
	row("mprotect RW/RX flipping (W^X)", measure(patch_mprotect, iters), m);
	row("rwx page, no protection", measure(patch_rwx, iters), m);

	return watch_rows();
}
