/* SPDX-License-Identifier: MIT */
/*
 * The measurements.  The parent process plans (what runs where, what fits in
 * memory), forks one child per backend (hw, where the CPU has keys, then
 * soft; each sets MPKIT_BACKEND before its first mpkit call) and collects
 * the samples the children write into shared memory.
 *
 * A child works size by size.  For one size it sets up a region per method
 * (as many as fit in memory at once), populates it, checks that closing it
 * really makes it fault and re-opening it really gives it back, and then,
 * for each count of other busy threads, takes the samples round robin over
 * the methods, so that a drift of the machine hits them all alike:
 *   switch: k iterations of close + re-open, timed as a block;
 *   touch:  k iterations of close + re-open, then the first write to every
 *           page, only the writes timed (the TLB refill mprotect causes);
 *   base:   the same writes with no close/re-open before them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#ifdef MPKIT_BENCH_SODIUM
#include <sodium.h>
#endif

#include "mpkit.h"
#include "bench.h"

#ifndef MADV_HUGEPAGE
#define MADV_HUGEPAGE 14
#define MADV_NOHUGEPAGE 15
#endif

#define HUGE_2M ((size_t)2 << 20)

const struct bench_method_info bench_methods[BM_COUNT] = {
	[BM_HW_ENTER] = { "hw_enter_leave", "mpkit hw: enter NONE + leave", BG_HW, 1, 0 },
	[BM_HW_SET] = { "hw_set", "mpkit hw: set NONE + set RW", BG_HW, 1, 0 },
	[BM_SOFT_ENTER] = { "soft_enter_leave", "mpkit soft: enter NONE + leave", BG_SOFT, 1, 0 },
	[BM_SOFT_SET] = { "soft_set", "mpkit soft: set NONE + set RW", BG_SOFT, 1, 0 },
	[BM_SOFT_ISO] = { "soft_set_isolated", "mpkit soft, isolated (mpk_adopt)", BG_SOFT, 1, 0 },
	[BM_SOFT_THP] = { "soft_set_thp", "mpkit soft, THP (mpk_adopt)", BG_SOFT, 1, 1 },
	[BM_MPROTECT] = { "mprotect", "mprotect pair, 4 KiB pages", BG_SOFT, 0, 0 },
	[BM_MPROTECT_THP] = { "mprotect_thp", "mprotect pair, THP 2 MiB pages", BG_SOFT, 0, 1 },
	[BM_MPROTECT_MANY] = { "mprotect_many", "mprotect, many 64 KiB mappings", BG_SOFT, 0, 0 },
	[BM_SODIUM] = { "sodium", "libsodium noaccess + readwrite", BG_SOFT, 0, 0 },
};

/* Chunk size and most mappings for BM_MPROTECT_MANY (max_map_count is
 * 65530 by default; each chunk and its guard are two mappings). */
#define MANY_CHUNK ((size_t)64 << 10)
#define MANY_MAX 16384

static size_t page;

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void bench_config_defaults(struct bench_config *c)
{
	static const size_t sizes[] = { 4u << 10, 64u << 10, 2u << 20, 64u << 20, 1u << 30 };
	static const int threads[] = { 0, 1, 2, 4 };

	memset(c, 0, sizeof(*c));
	memcpy(c->sizes, sizes, sizeof(sizes));
	c->nsizes = sizeof(sizes) / sizeof(sizes[0]);
	memcpy(c->threads, threads, sizeof(threads));
	c->nthreads = sizeof(threads) / sizeof(threads[0]);
	c->reps = 15;
	c->sample_ns = 5e6;
	c->pin = 1;
	c->mem_fraction = 0.7;
}

/* ---------------------------------------------------------------- progress */

static int progress_tty;
static int progress_quiet;
static uint64_t progress_t0;

static void __attribute__((format(printf, 1, 2))) progress(const char *fmt, ...)
{
	char line[256];
	va_list ap;

	if (progress_quiet)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	double s = (double)(now_ns() - progress_t0) / 1e9;
	if (progress_tty)
		fprintf(stderr, "\r\033[K[%5.1fs] %s", s, line);
	else
		fprintf(stderr, "[%5.1fs] %s\n", s, line);
}

static void progress_done(void)
{
	if (!progress_quiet && progress_tty)
		fprintf(stderr, "\r\033[K");
}

/* ---------------------------------------------------------------- probes */

/*
 * Does touching p fault?  On x86-64 the access is one known 2-byte
 * instruction and the SIGSEGV handler steps over it, so the thread returns
 * through sigreturn with its own PKRU (a siglongjmp would keep the
 * handler's PKRU, which closes every key).  Elsewhere: sigsetjmp.
 */
static volatile sig_atomic_t probe_faulted, probe_code;

#if defined(__x86_64__)
__asm__(".pushsection .text\n"
	".p2align 4\n"
	".globl bench_probe_load\n"
	".hidden bench_probe_load\n"
	".type bench_probe_load, @function\n"
	"bench_probe_load:\n"
	"\tmovb (%rdi), %al\n" /* 8a 07 */
	"\tret\n"
	".size bench_probe_load, .-bench_probe_load\n"
	".p2align 4\n"
	".globl bench_probe_store\n"
	".hidden bench_probe_store\n"
	".globl bench_probe_store_insn\n"
	".hidden bench_probe_store_insn\n"
	".type bench_probe_store, @function\n"
	"bench_probe_store:\n"
	"\tmovl %esi, %eax\n" /* 89 f0 */
	"bench_probe_store_insn:\n"
	"\tmovb %al, (%rdi)\n" /* 88 07 */
	"\tret\n"
	".size bench_probe_store, .-bench_probe_store\n"
	".popsection\n");
unsigned char bench_probe_load(const volatile void *p);
void bench_probe_store(volatile void *p, int v);
extern const char bench_probe_store_insn[];

static void probe_handler(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uintptr_t ip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];

	if (ip == (uintptr_t)bench_probe_load || ip == (uintptr_t)bench_probe_store_insn) {
		probe_faulted = 1;
		probe_code = si->si_code;
		uc->uc_mcontext.gregs[REG_RIP] += 2;
		return;
	}
	signal(sig, SIG_DFL); /* not ours: fault again, for real */
}

static int probe(volatile unsigned char *p, int write, int v, unsigned char *val)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = probe_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &old);
	probe_faulted = 0;
	if (write)
		bench_probe_store(p, v);
	else
		*val = bench_probe_load(p);
	sigaction(SIGSEGV, &old, NULL);
	return probe_faulted ? (probe_code ? probe_code : -1) : 0;
}
#else
static sigjmp_buf probe_env;

static void probe_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	probe_faulted = 1;
	probe_code = si->si_code;
	siglongjmp(probe_env, 1);
}

static int probe(volatile unsigned char *p, int write, int v, unsigned char *val)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = probe_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &old);
	probe_faulted = 0;
	if (!sigsetjmp(probe_env, 1)) {
		if (write)
			*p = (unsigned char)v;
		else
			*val = *p;
	}
	sigaction(SIGSEGV, &old, NULL);
	return probe_faulted ? (probe_code ? probe_code : -1) : 0;
}
#endif

/* ---------------------------------------------------------------- regions */

/* One method's region at one size: what it closes, re-opens and touches. */
struct slot {
	int m;
	size_t size;
	char *base;              /* first chunk */
	size_t chunk, stride, n; /* n chunks of chunk bytes, stride apart */
	void *res;               /* reservation to unmap */
	size_t res_len;
	mpk_domain *d;
	mpk_scope scope;
	void *sodium;
	long k_sw, k_touch;
	unsigned long errors;
	int up;
};

/*
 * An anonymous read/write mapping of len bytes at an align-aligned address,
 * between PROT_NONE guards marked MADV_DONTFORK, so that it never merges
 * with a neighbour (not even while it is PROT_NONE itself): every method
 * changes exactly its own mapping.
 */
static char *map_isolated(struct slot *s, size_t len, size_t align, int advice)
{
	size_t total = len + align + 2 * page;
	char *res = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED)
		return NULL;
	madvise(res, total, MADV_DONTFORK);
	char *p = (char *)(((uintptr_t)res + page + align - 1) & ~(uintptr_t)(align - 1));
	if (mmap(p, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
		int err = errno;
		munmap(res, total);
		errno = err;
		return NULL;
	}
	if (advice >= 0)
		madvise(p, len, advice);
	s->res = res;
	s->res_len = total;
	return p;
}

static void touch(const struct slot *s)
{
	for (size_t i = 0; i < s->n; i++) {
		volatile char *c = s->base + i * s->stride;
		for (size_t off = 0; off < s->chunk; off += page)
			c[off]++;
	}
}

/* Close (1) or re-open (0) the slot's region; 0 or -1. */
static int toggle(struct slot *s, int close)
{
	int rc = 0;

	switch (s->m) {
	case BM_HW_ENTER:
	case BM_SOFT_ENTER:
		if (close) {
			s->scope = mpk_enter(s->d, MPK_NONE);
			rc = s->scope.saved < 0 ? -1 : 0;
		} else {
			rc = mpk_leave(&s->scope);
		}
		break;
	case BM_HW_SET:
	case BM_SOFT_SET:
	case BM_SOFT_ISO:
	case BM_SOFT_THP:
		rc = mpk_set(s->d, close ? MPK_NONE : MPK_RW);
		break;
	case BM_MPROTECT:
	case BM_MPROTECT_THP:
	case BM_MPROTECT_MANY:
		for (size_t i = 0; i < s->n && !rc; i++)
			rc = mprotect(s->base + i * s->stride, s->chunk,
				      close ? PROT_NONE : PROT_READ | PROT_WRITE);
		break;
	case BM_SODIUM:
#ifdef MPKIT_BENCH_SODIUM
		rc = close ? sodium_mprotect_noaccess(s->sodium) : sodium_mprotect_readwrite(s->sodium);
#else
		rc = -1;
#endif
		break;
	}
	return rc;
}

/* k close + re-open pairs, timed as a block; the hot loops are specialised
 * per method so that the loop adds nothing but the calls. */
static uint64_t run_pairs(struct slot *s, long k)
{
	int bad = 0;
	uint64_t t0 = now_ns();

	switch (s->m) {
	case BM_HW_ENTER:
	case BM_SOFT_ENTER:
		for (long i = 0; i < k; i++) {
			mpk_scope sc = mpk_enter(s->d, MPK_NONE);
			bad |= sc.saved;
			bad |= mpk_leave(&sc);
		}
		break;
	case BM_HW_SET:
	case BM_SOFT_SET:
	case BM_SOFT_ISO:
	case BM_SOFT_THP:
		for (long i = 0; i < k; i++) {
			bad |= mpk_set(s->d, MPK_NONE);
			bad |= mpk_set(s->d, MPK_RW);
		}
		break;
	case BM_MPROTECT:
	case BM_MPROTECT_THP:
		for (long i = 0; i < k; i++) {
			bad |= mprotect(s->base, s->size, PROT_NONE);
			bad |= mprotect(s->base, s->size, PROT_READ | PROT_WRITE);
		}
		break;
	case BM_MPROTECT_MANY:
		for (long i = 0; i < k; i++) {
			for (size_t c = 0; c < s->n; c++)
				bad |= mprotect(s->base + c * s->stride, s->chunk, PROT_NONE);
			for (size_t c = 0; c < s->n; c++)
				bad |= mprotect(s->base + c * s->stride, s->chunk, PROT_READ | PROT_WRITE);
		}
		break;
	case BM_SODIUM:
#ifdef MPKIT_BENCH_SODIUM
		for (long i = 0; i < k; i++) {
			bad |= sodium_mprotect_noaccess(s->sodium);
			bad |= sodium_mprotect_readwrite(s->sodium);
		}
#endif
		break;
	}
	uint64_t t1 = now_ns();
	if (bad < 0)
		s->errors++;
	return t1 - t0;
}

/* For the mpkit rows: k mprotect pairs on the domain's region itself,
 * bypassing mpkit (which believes it open, as it is between pairs). */
static uint64_t run_raw_pairs(struct slot *s, long k)
{
	int bad = 0;
	uint64_t t0 = now_ns();
	for (long i = 0; i < k; i++) {
		bad |= mprotect(s->base, s->size, PROT_NONE);
		bad |= mprotect(s->base, s->size, PROT_READ | PROT_WRITE);
	}
	uint64_t t1 = now_ns();
	if (bad < 0)
		s->errors++;
	return t1 - t0;
}

static void slot_down(struct slot *s)
{
	if (!s->up && !s->res && !s->d && !s->sodium)
		return;
	if (s->d)
		mpk_domain_destroy(s->d); /* unmaps allocated and adopted memory */
	if (s->res)
		munmap(s->res, s->res_len); /* our mapping, or the guards around an adopted one */
#ifdef MPKIT_BENCH_SODIUM
	if (s->sodium) {
		sodium_mprotect_readwrite(s->sodium);
		sodium_free(s->sodium);
	}
#endif
	memset(s, 0, sizeof(*s));
}

static const char *domain_name(int m)
{
	static const char *names[BM_COUNT] = {
		[BM_HW_ENTER] = "bench-hw-enter", [BM_HW_SET] = "bench-hw-set",
		[BM_SOFT_ENTER] = "bench-soft-enter", [BM_SOFT_SET] = "bench-soft-set",
		[BM_SOFT_ISO] = "bench-soft-isolated", [BM_SOFT_THP] = "bench-soft-thp",
	};
	return names[m];
}

static int fail(struct bench_setup *st, const char *what)
{
	st->status = BS_FAILED;
	snprintf(st->why, sizeof(st->why), "%s: %s", what, strerror(errno));
	return -1;
}

/* Map, populate and verify the region of method m at size. */
static int slot_up(struct slot *s, int m, size_t size, struct bench_setup *st)
{
	memset(s, 0, sizeof(*s));
	s->m = m;
	s->size = size;
	s->n = 1;
	s->chunk = s->stride = size;

	switch (m) {
	case BM_HW_ENTER:
	case BM_HW_SET:
	case BM_SOFT_ENTER:
	case BM_SOFT_SET:
		if (!(s->d = mpk_domain_create(domain_name(m), MPK_RW, 0)))
			return fail(st, "mpk_domain_create");
		if (!(s->base = mpk_alloc(s->d, size)))
			return fail(st, "mpk_alloc");
		/* 4 KiB pages, like the raw mprotect row it is compared with */
		madvise(s->base, size, MADV_NOHUGEPAGE);
		break;
	case BM_SOFT_ISO:
		/* What mpk_alloc would give with a mapping the kernel cannot
		 * merge with a neighbour: compare with BM_MPROTECT. */
		if (!(s->base = map_isolated(s, size, page, MADV_NOHUGEPAGE)))
			return fail(st, "mmap");
		if (!(s->d = mpk_domain_create(domain_name(m), MPK_RW, 0)))
			return fail(st, "mpk_domain_create");
		if (mpk_adopt(s->d, s->base, size))
			return fail(st, "mpk_adopt");
		break;
	case BM_SOFT_THP:
		if (!(s->base = map_isolated(s, size, HUGE_2M, MADV_HUGEPAGE)))
			return fail(st, "mmap");
		touch(s); /* populate before adopting: the region gets huge pages */
		if (!(s->d = mpk_domain_create(domain_name(m), MPK_RW, 0)))
			return fail(st, "mpk_domain_create");
		/* The domain owns the mapping now; the guards stay ours. */
		if (mpk_adopt(s->d, s->base, size))
			return fail(st, "mpk_adopt");
		break;
	case BM_MPROTECT:
		if (!(s->base = map_isolated(s, size, page, MADV_NOHUGEPAGE)))
			return fail(st, "mmap");
		break;
	case BM_MPROTECT_THP:
		if (!(s->base = map_isolated(s, size, HUGE_2M, MADV_HUGEPAGE)))
			return fail(st, "mmap");
		break;
	case BM_MPROTECT_MANY: {
		size_t chunk = size < MANY_CHUNK ? size : MANY_CHUNK;
		while (size / chunk > MANY_MAX)
			chunk *= 2;
		s->chunk = chunk;
		s->n = size / chunk;
		s->stride = chunk + page; /* a guard page between the mappings */
		s->res_len = s->n * s->stride + page;
		s->res = mmap(NULL, s->res_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (s->res == MAP_FAILED) {
			s->res = NULL;
			return fail(st, "mmap");
		}
		madvise(s->res, s->res_len, MADV_DONTFORK);
		s->base = (char *)s->res + page;
		for (size_t i = 0; i < s->n; i++) {
			char *c = s->base + i * s->stride;
			if (mmap(c, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
				return fail(st, "mmap (small mappings)");
			madvise(c, chunk, MADV_NOHUGEPAGE);
		}
		break;
	}
	case BM_SODIUM:
#ifdef MPKIT_BENCH_SODIUM
		if (!(s->sodium = sodium_malloc(size)))
			return fail(st, "sodium_malloc");
		s->base = s->sodium;
		break;
#else
		errno = ENOTSUP;
		return fail(st, "libsodium");
#endif
	}
	s->up = 1;
	touch(s);

	/* What the region really is. */
	st->mappings = (long)s->n;
	st->chunk = s->chunk;
	st->huge_kb = bench_smaps_kb(s->base, s->chunk, "AnonHugePages");
	if (s->n > 1 && st->huge_kb >= 0)
		st->huge_kb *= (long)s->n; /* all chunks alike; reading 16384 is slow */
	st->locked_kb = m == BM_SODIUM ? bench_smaps_kb(s->base, size, "Locked") : -1;

	/* Verify: closed faults, re-opened reads and writes, contents kept. */
	unsigned char *first = (unsigned char *)s->base;
	unsigned char *last = (unsigned char *)s->base + (s->n - 1) * s->stride + s->chunk - 1;
	unsigned char v = 0;
	*first = 0x5a;
	*last = 0xa5;
	if (toggle(s, 1))
		return fail(st, "closing");
	int c1 = probe(first, 0, 0, &v), c2 = probe(last, 0, 0, &v);
	if (toggle(s, 0))
		return fail(st, "re-opening");
	if (!c1 || !c2) {
		st->status = BS_FAILED;
		snprintf(st->why, sizeof(st->why), "verification: a read of the closed region did not fault");
		return -1;
	}
	unsigned char a = 0, b = 0;
	int w1 = probe(first, 1, 0x5b, NULL), w2 = probe(last, 1, 0xa6, NULL);
	int r1 = probe(first, 0, 0, &a), r2 = probe(last, 0, 0, &b);
	if (w1 || w2 || r1 || r2 || a != 0x5b || b != 0xa6) {
		st->status = BS_FAILED;
		snprintf(st->why, sizeof(st->why), "verification: the re-opened region is not accessible "
			 "(fault codes %d %d %d %d) or lost its contents", w1, w2, r1, r2);
		return -1;
	}
	st->fault_code = c1;
	st->verified = 1;
	return 0;
}

/* ---------------------------------------------------------------- threads */

struct busy {
	pthread_t t;
	int cpu;
	char *buf;
};

static volatile int busy_stop;

/* Writes its own 256 KiB over and over: a thread that holds TLB entries
 * of this process on its CPU, so a shootdown has someone to reach. */
static void *busy_main(void *arg)
{
	struct busy *b = arg;
	const size_t len = 256 << 10;

	if (b->cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(b->cpu, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	while (!__atomic_load_n(&busy_stop, __ATOMIC_RELAXED))
		for (size_t off = 0; off < len; off += 4096)
			((volatile char *)b->buf)[off]++;
	return NULL;
}

static int busy_start(struct busy *b, int n, const struct bench_machine *mc)
{
	__atomic_store_n(&busy_stop, 0, __ATOMIC_RELAXED);
	for (int i = 0; i < n; i++) {
		b[i].cpu = mc->pinned ? mc->cpu_list[1 + i % (mc->cpus_allowed - 1)] : -1;
		b[i].buf = calloc(1, 256 << 10);
		if (!b[i].buf || pthread_create(&b[i].t, NULL, busy_main, &b[i])) {
			free(b[i].buf);
			__atomic_store_n(&busy_stop, 1, __ATOMIC_RELAXED);
			for (int j = 0; j < i; j++) {
				pthread_join(b[j].t, NULL);
				free(b[j].buf);
			}
			return -1;
		}
	}
	return 0;
}

static void busy_stop_all(struct busy *b, int n)
{
	__atomic_store_n(&busy_stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < n; i++) {
		pthread_join(b[i].t, NULL);
		free(b[i].buf);
	}
}

/* ---------------------------------------------------------------- sampling */

static double timer_cost(void)
{
	double best[31];
	for (int r = 0; r < 31; r++) {
		uint64_t t0 = now_ns();
		for (int i = 0; i < 100; i++)
			(void)now_ns();
		best[r] = (double)(now_ns() - t0) / 101;
	}
	/* median */
	for (int i = 1; i < 31; i++)
		for (int j = i; j > 0 && best[j] < best[j - 1]; j--) {
			double x = best[j];
			best[j] = best[j - 1];
			best[j - 1] = x;
		}
	return best[15];
}

static long iters_for(double one_ns, double target_ns)
{
	if (target_ns <= 0 || one_ns <= 0)
		return 1;
	double k = ceil(target_ns / one_ns);
	return k < 1 ? 1 : k > 1e6 ? 1000000 : (long)k;
}

/* How many iterations make a sample last cfg.sample_ns. */
static void calibrate(struct slot *s, const struct bench_config *cfg, double timer)
{
	double pair = 1e300, cycle = 1e300;

	run_pairs(s, 2); /* warm up */
	for (int i = 0; i < 3; i++) {
		double t = (double)run_pairs(s, 1);
		pair = t < pair ? t : pair;
		uint64_t t0 = now_ns();
		touch(s);
		t = (double)(now_ns() - t0);
		cycle = t < cycle ? t : cycle;
	}
	cycle += pair + 2 * timer;
	s->k_sw = iters_for(pair, cfg->sample_ns);
	s->k_touch = iters_for(cycle, cfg->sample_ns);
}

static double sample_switch(struct slot *s)
{
	return (double)run_pairs(s, s->k_sw) / (double)s->k_sw;
}

static double sample_touch(struct slot *s, int after_switch, double timer)
{
	double sum = 0;
	for (long i = 0; i < s->k_touch; i++) {
		if (after_switch)
			run_pairs(s, 1);
		uint64_t t0 = now_ns();
		touch(s);
		sum += (double)(now_ns() - t0) - timer;
	}
	sum /= (double)s->k_touch;
	return sum < 0 ? 0 : sum;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double quantile(const double *sorted, int n, double q)
{
	if (n <= 0)
		return 0;
	double pos = q * (n - 1);
	int i = (int)pos;
	if (i >= n - 1)
		return sorted[n - 1];
	return sorted[i] + (pos - i) * (sorted[i + 1] - sorted[i]);
}

void bench__stat(struct bench_stat *st, const double *v, int n)
{
	double tmp[BENCH_MAX_REPS];
	if (n > BENCH_MAX_REPS)
		n = BENCH_MAX_REPS;
	memcpy(tmp, v, (size_t)n * sizeof(double));
	qsort(tmp, (size_t)n, sizeof(double), cmp_double);
	st->median = quantile(tmp, n, 0.5);
	st->p10 = quantile(tmp, n, 0.1);
	st->p90 = quantile(tmp, n, 0.9);
}

/* Rights that do not change: mpk_set(RW) on RW, enter(RW)+leave on RW. */
static void measure_nochange(struct bench_results *r, int group, struct slot *s)
{
	struct bench_nochange *nc = &r->nochange[group];
	struct mpk_stats a, b;
	int reps = r->cfg.reps;
	double *x = calloc((size_t)reps, sizeof(double)), *y = calloc((size_t)reps, sizeof(double));
	int bad = 0;

	if (!x || !y) {
		free(x);
		free(y);
		nc->status = BS_FAILED;
		snprintf(nc->why, sizeof(nc->why), "out of memory");
		return;
	}
	uint64_t t0 = now_ns();
	for (int i = 0; i < 1000; i++)
		bad |= mpk_set(s->d, MPK_RW);
	double one = (double)(now_ns() - t0) / 1000;
	long k = iters_for(one, r->cfg.sample_ns);
	if (k < 100)
		k = 100;
	mpk_stats_get(&a);
	for (int i = 0; i < reps; i++) {
		t0 = now_ns();
		for (long j = 0; j < k; j++)
			bad |= mpk_set(s->d, MPK_RW);
		x[i] = (double)(now_ns() - t0) / (double)k;
		t0 = now_ns();
		for (long j = 0; j < k; j++) {
			mpk_scope sc = mpk_enter(s->d, MPK_RW);
			bad |= sc.saved;
			bad |= mpk_leave(&sc);
		}
		y[i] = (double)(now_ns() - t0) / (double)k;
	}
	mpk_stats_get(&b);
	nc->calls = (unsigned long long)reps * (unsigned long long)k * 3;
	nc->mprotects = b.mprotect_calls - a.mprotect_calls;
	bench__stat(&nc->set_same, x, reps);
	bench__stat(&nc->enter_same, y, reps);
	nc->status = bad < 0 ? BS_FAILED : BS_OK;
	if (bad < 0)
		snprintf(nc->why, sizeof(nc->why), "a call failed");
	free(x);
	free(y);
}

/* ---------------------------------------------------------------- a child */

/* The most regions of one size that may exist at once (parent's plan). */
static int batch_max[BENCH_MAX_SIZES];

static void pin_self(const struct bench_machine *mc)
{
	if (!mc->pinned)
		return;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(mc->cpu_list[0], &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void group_fail_all(struct bench_results *r, int group, const char *why)
{
	for (int m = 0; m < BM_COUNT; m++) {
		if (bench_methods[m].group != group)
			continue;
		for (int s = 0; s < r->cfg.nsizes; s++) {
			struct bench_setup *st = bench_setup(r, m, s);
			if (st->status != BS_NOT_RUN)
				continue;
			st->status = BS_FAILED;
			snprintf(st->why, sizeof(st->why), "%s", why);
		}
	}
}

static void run_group(struct bench_results *r, int group)
{
	const struct bench_config *cfg = &r->cfg;
	const struct bench_machine *mc = &r->machine;
	const char *gname = group == BG_HW ? "hw" : "soft";
	double timer = mc->timer_ns;
	struct slot slots[BM_COUNT];
	struct busy busy[BENCH_MAX_BUSY];
	int nochange_done = 0;

	setenv("MPKIT_BACKEND", gname, 1);
	int want = group == BG_HW ? MPK_BACKEND_HW : MPK_BACKEND_SOFT;
	if (mpk_init() || mpk_backend() != want) {
		char why[160];
		snprintf(why, sizeof(why), "mpkit did not start the %s backend (%s)", gname,
			 errno ? strerror(errno) : "mpkit was initialised before bench_run()");
		group_fail_all(r, group, why);
		r->nochange[group].status = BS_FAILED;
		snprintf(r->nochange[group].why, sizeof(r->nochange[group].why), "%s", why);
		return;
	}
#ifdef MPKIT_BENCH_SODIUM
	if (group == BG_SOFT && sodium_init() < 0) {
		for (int s = 0; s < cfg->nsizes; s++) {
			struct bench_setup *st = bench_setup(r, BM_SODIUM, s);
			if (st->status == BS_NOT_RUN) {
				st->status = BS_FAILED;
				snprintf(st->why, sizeof(st->why), "sodium_init() failed");
			}
		}
	}
#endif
	pin_self(mc);
	memset(slots, 0, sizeof(slots));

	for (int si = 0; si < cfg->nsizes; si++) {
		size_t size = cfg->sizes[si];
		char sz[32];
		int todo[BM_COUNT], ntodo = 0;

		bench_size_str(size, sz, sizeof(sz));
		for (int m = 0; m < BM_COUNT; m++)
			if (bench_methods[m].group == group && bench_setup(r, m, si)->status == BS_NOT_RUN)
				todo[ntodo++] = m;
		int per = batch_max[si] > 0 ? batch_max[si] : 1;
		for (int b0 = 0, batch = 0; b0 < ntodo; b0 += per, batch++) {
			int live[BM_COUNT], nlive = 0;
			int b1 = b0 + per < ntodo ? b0 + per : ntodo;

			progress("%s %s: setting up %d region%s", gname, sz, b1 - b0, b1 - b0 == 1 ? "" : "s");
			for (int i = b0; i < b1; i++) {
				int m = todo[i];
				struct bench_setup *st = bench_setup(r, m, si);
				st->batch = batch;
				if (slot_up(&slots[m], m, size, st)) {
					slot_down(&slots[m]);
					continue;
				}
				live[nlive++] = m;
			}
			/* Which mapping each region ended up in, now that all exist. */
			for (int i = 0; i < nlive; i++) {
				struct bench_setup *st = bench_setup(r, live[i], si);
				st->vma_kb = bench_vma_kb(slots[live[i]].base, &st->named);
			}
			for (int i = 0; i < nlive; i++)
				calibrate(&slots[live[i]], cfg, timer);

			/* Unchanged rights, once per backend, at the first size. */
			int setm = group == BG_HW ? BM_HW_SET : BM_SOFT_SET;
			if (!nochange_done && slots[setm].up) {
				measure_nochange(r, group, &slots[setm]);
				nochange_done = 1;
			}

			for (int ti = 0; ti < cfg->nthreads && nlive; ti++) {
				int nt = cfg->threads[ti];
				if (busy_start(busy, nt, mc)) {
					for (int i = 0; i < nlive; i++) {
						struct bench_cell *c = bench_cell(r, live[i], si, ti);
						c->status = BS_FAILED;
					}
					continue;
				}
				for (int rep = 0; rep < cfg->reps; rep++) {
					if (rep % 4 == 0 || rep == cfg->reps - 1)
						progress("%s %s, %d other thread%s: close+re-open %d/%d", gname, sz, nt,
							 nt == 1 ? "" : "s", rep + 1, cfg->reps);
					/* Round robin, starting one further each round: no
					 * method always follows the same other one.  The
					 * mprotect pairs on the mpkit rows' own regions come
					 * in a second pass: right after the switch on the
					 * same region they would find its page tables in
					 * cache, and every sample should start as cold as
					 * the others, after work on another region. */
					for (int j = 0; j < nlive; j++) {
						int i = (j + rep) % nlive;
						bench_cell(r, live[i], si, ti)->sw[rep] = sample_switch(&slots[live[i]]);
					}
					for (int j = 0; j < nlive; j++) {
						int i = (j + rep) % nlive;
						struct slot *sl = &slots[live[i]];
						if (bench_methods[live[i]].backend_row)
							bench_cell(r, live[i], si, ti)->raw[rep] =
								(double)run_raw_pairs(sl, sl->k_sw) / (double)sl->k_sw;
					}
				}
				for (int rep = 0; rep < cfg->reps; rep++) {
					if (rep % 4 == 0 || rep == cfg->reps - 1)
						progress("%s %s, %d other thread%s: first touch %d/%d", gname, sz, nt,
							 nt == 1 ? "" : "s", rep + 1, cfg->reps);
					for (int j = 0; j < nlive; j++) {
						int i = (j + rep) % nlive;
						struct bench_cell *c = bench_cell(r, live[i], si, ti);
						c->touch[rep] = sample_touch(&slots[live[i]], 1, timer);
						c->base[rep] = sample_touch(&slots[live[i]], 0, timer);
					}
				}
				busy_stop_all(busy, nt);
				for (int i = 0; i < nlive; i++) {
					struct bench_cell *c = bench_cell(r, live[i], si, ti);
					c->n = cfg->reps;
					c->iters_switch = slots[live[i]].k_sw;
					c->iters_touch = slots[live[i]].k_touch;
					c->status = BS_OK;
				}
			}
			for (int i = 0; i < nlive; i++) {
				int m = live[i];
				struct bench_setup *st = bench_setup(r, m, si);
				struct slot *s = &slots[m];
				st->huge_kb_after = bench_smaps_kb(s->base, s->chunk, "AnonHugePages");
				if (s->n > 1 && st->huge_kb_after >= 0)
					st->huge_kb_after *= (long)s->n;
				if (s->errors) {
					st->status = BS_FAILED;
					snprintf(st->why, sizeof(st->why), "%lu samples saw a failing call", s->errors);
				} else {
					st->status = BS_OK;
				}
			}
			for (int i = 0; i < nlive; i++)
				slot_down(&slots[live[i]]);
		}
	}
	progress_done();
}

/* ---------------------------------------------------------------- parent */

/* Everything the children write lives in one shared mapping. */
static void *shared_alloc(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* In a child: what mpkit itself reports (it must not run in the parent). */
static void probe_mpkit(struct bench_machine *mc)
{
	struct mpk_info in;
	unsetenv("MPKIT_BACKEND");
	memset(&in, 0, sizeof(in));
	mpk_info(&in);
	mc->cpu_pku = in.cpu_pku;
	mc->cpu_ospke = in.cpu_ospke;
	mc->kernel_pkeys = in.kernel_pkeys;
	mc->auto_backend = in.backend;
	snprintf(mc->mpkit_version, sizeof(mc->mpkit_version), "%s", mpk_version());
}

/* Run fn in a child; a description of how it ended if not well. */
static int in_child(void (*fn)(struct bench_results *, int), struct bench_results *r, int arg, char *why,
		    size_t whylen)
{
	int st;

	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(why, whylen, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		fn(r, arg);
		fflush(NULL);
		_exit(0);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			snprintf(why, whylen, "waitpid: %s", strerror(errno));
			return -1;
		}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (WIFSIGNALED(st))
		snprintf(why, whylen, "the measuring process died of signal %d (%s)", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
	else
		snprintf(why, whylen, "the measuring process exited with status %d", WEXITSTATUS(st));
	return -1;
}

static void child_probe(struct bench_results *r, int arg)
{
	(void)arg;
	probe_mpkit(&r->machine);
}

static void child_group(struct bench_results *r, int group)
{
	run_group(r, group);
}

/* Decide what is not available and what does not fit, before measuring. */
static void plan(struct bench_results *r)
{
	const struct bench_config *cfg = &r->cfg;
	struct bench_machine *mc = &r->machine;

	for (int si = 0; si < cfg->nsizes; si++) {
		size_t size = cfg->sizes[si];
		int napplicable = 0;
		for (int m = 0; m < BM_COUNT; m++) {
			struct bench_setup *st = bench_setup(r, m, si);
			const struct bench_method_info *mi = &bench_methods[m];
			st->huge_kb = st->huge_kb_after = st->locked_kb = -1;
			if (mi->group == BG_HW && !mc->hw_available) {
				st->status = BS_NA;
				if (!mc->cpu_pku)
					snprintf(st->why, sizeof(st->why), "not available on this CPU");
				else if (!mc->cpu_ospke)
					snprintf(st->why, sizeof(st->why), "not available: the kernel did not enable PKU (OSPKE)");
				else
					snprintf(st->why, sizeof(st->why), "not available: the kernel hands out no keys");
			} else if (mi->thp && (size < HUGE_2M || size % HUGE_2M)) {
				st->status = BS_NA;
				snprintf(st->why, sizeof(st->why), "n/a: a huge page is 2 MiB");
			} else if (m == BM_SODIUM && !mc->sodium_version[0]) {
				st->status = BS_NA;
				snprintf(st->why, sizeof(st->why),
					 "not built: libsodium was not found at build time (install libsodium-dev, rebuild)");
			} else if (mi->group == BG_SOFT) {
				napplicable++;
			}
		}
		double usable = mc->mem_avail * cfg->mem_fraction;
		char sz[32], us[32], need[32];
		bench_size_str(size, sz, sizeof(sz));
		bench_size_str((size_t)usable, us, sizeof(us));
		bench_size_str(size * (size_t)(napplicable ? napplicable : 1), need, sizeof(need));
		if ((double)size > usable) {
			for (int m = 0; m < BM_COUNT; m++) {
				struct bench_setup *st = bench_setup(r, m, si);
				if (st->status != BS_NOT_RUN)
					continue;
				st->status = BS_SKIPPED;
				snprintf(st->why, sizeof(st->why), "skipped: %s does not fit in %s (%.0f%% of available memory)",
					 sz, us, cfg->mem_fraction * 100);
			}
			snprintf(r->size_note[si], sizeof(r->size_note[si]),
				 "%s skipped: capped by free memory (%s usable = %.0f%% of MemAvailable)", sz, us,
				 cfg->mem_fraction * 100);
			batch_max[si] = 0;
			continue;
		}
		int fit = (int)(usable / (double)size);
		batch_max[si] = fit < BM_COUNT ? fit : BM_COUNT;
		if (napplicable > batch_max[si])
			snprintf(r->size_note[si], sizeof(r->size_note[si]),
				 "%s: %d regions need %s at once, %s usable: measured %d at a time", sz, napplicable,
				 need, us, batch_max[si]);
	}
}

struct bench_results *bench_run(const struct bench_config *cfg_in)
{
	struct bench_config cfg = *cfg_in;

	if (cfg.nsizes < 1 || cfg.nsizes > BENCH_MAX_SIZES || cfg.nthreads < 1 ||
	    cfg.nthreads > BENCH_MAX_THREADS || cfg.reps < 1 || cfg.reps > BENCH_MAX_REPS) {
		errno = EINVAL;
		return NULL;
	}
	page = (size_t)sysconf(_SC_PAGESIZE);
	for (int i = 0; i < cfg.nsizes; i++)
		if (!cfg.sizes[i] || cfg.sizes[i] % page) {
			errno = EINVAL;
			return NULL;
		}
	for (int i = 0; i < cfg.nthreads; i++)
		if (cfg.threads[i] < 0 || cfg.threads[i] > BENCH_MAX_BUSY) {
			errno = EINVAL;
			return NULL;
		}
	if (cfg.mem_fraction <= 0 || cfg.mem_fraction > 1)
		cfg.mem_fraction = 0.7;

	size_t ncells = (size_t)BM_COUNT * cfg.nsizes * cfg.nthreads;
	size_t nsetups = (size_t)BM_COUNT * cfg.nsizes;
	size_t len = sizeof(struct bench_results) + ncells * sizeof(struct bench_cell) +
		     nsetups * sizeof(struct bench_setup) + ncells * 4 * cfg.reps * sizeof(double);
	char *mem = shared_alloc(len);
	if (!mem)
		return NULL;
	struct bench_results *r = (struct bench_results *)mem;
	r->cfg = cfg;
	r->cells = (struct bench_cell *)(mem + sizeof(*r));
	r->setups = (struct bench_setup *)(r->cells + ncells);
	double *samples = (double *)(r->setups + nsetups);
	for (size_t i = 0; i < ncells; i++) {
		r->cells[i].sw = samples + (4 * i + 0) * cfg.reps;
		r->cells[i].touch = samples + (4 * i + 1) * cfg.reps;
		r->cells[i].base = samples + (4 * i + 2) * cfg.reps;
		r->cells[i].raw = samples + (4 * i + 3) * cfg.reps;
	}

	progress_quiet = cfg.quiet;
	progress_tty = isatty(2);
	progress_t0 = now_ns();

	struct bench_machine *mc = &r->machine;
	bench_machine_probe(mc);
	mc->page = page;
	mc->timer_ns = timer_cost();
	char why[200];
	if (in_child(child_probe, r, 0, why, sizeof(why)))
		snprintf(mc->mpkit_version, sizeof(mc->mpkit_version), "?");
	mc->hw_available = mc->cpu_pku && mc->cpu_ospke && mc->kernel_pkeys;
	mc->pinned = cfg.pin && mc->cpus_allowed >= 2;
#ifdef MPKIT_BENCH_SODIUM
	snprintf(mc->sodium_version, sizeof(mc->sodium_version), "%s", sodium_version_string());
#endif
	progress("reading the hw fast path from the binary");
	bench_fastpath_probe(&r->fastpath, cfg.exe_label);
	plan(r);
	r->ref_method = mc->hw_available ? BM_HW_SET : BM_SOFT_SET;

	if (mc->hw_available && in_child(child_group, r, BG_HW, why, sizeof(why))) {
		snprintf(r->group_error[BG_HW], sizeof(r->group_error[BG_HW]), "%s", why);
		progress_done();
	}
	if (in_child(child_group, r, BG_SOFT, why, sizeof(why))) {
		snprintf(r->group_error[BG_SOFT], sizeof(r->group_error[BG_SOFT]), "%s", why);
		progress_done();
	}
	if (!mc->hw_available) {
		r->nochange[BG_HW].status = BS_NA;
		snprintf(r->nochange[BG_HW].why, sizeof(r->nochange[BG_HW].why), "not available on this CPU");
	}

	/* A child that died leaves cells unfilled: say so. */
	for (int g = 0; g < 2; g++)
		if (r->group_error[g][0])
			group_fail_all(r, g, r->group_error[g]);

	/* Statistics and ratios. */
	for (int m = 0; m < BM_COUNT; m++)
		for (int s = 0; s < cfg.nsizes; s++) {
			struct bench_setup *st = bench_setup(r, m, s);
			for (int t = 0; t < cfg.nthreads; t++) {
				struct bench_cell *c = bench_cell(r, m, s, t);
				if (st->status != BS_OK || c->status != BS_OK) {
					if (c->status == BS_OK || c->status == BS_NOT_RUN)
						c->status = st->status == BS_OK ? BS_FAILED : st->status;
					continue;
				}
				bench__stat(&c->s_sw, c->sw, c->n);
				bench__stat(&c->s_touch, c->touch, c->n);
				bench__stat(&c->s_base, c->base, c->n);
				if (bench_methods[m].backend_row) {
					double q[BENCH_MAX_REPS];
					bench__stat(&c->s_raw, c->raw, c->n);
					for (int i = 0; i < c->n; i++)
						q[i] = c->raw[i] > 0 ? c->sw[i] / c->raw[i] : 0;
					bench__stat(&c->s_pair, q, c->n);
				}
			}
		}
	for (int m = 0; m < BM_COUNT; m++)
		for (int s = 0; s < cfg.nsizes; s++)
			for (int t = 0; t < cfg.nthreads; t++) {
				struct bench_cell *c = bench_cell(r, m, s, t);
				struct bench_cell *ref = bench_cell(r, r->ref_method, s, t);
				if (c->status == BS_OK && ref->status == BS_OK && ref->s_sw.median > 0)
					c->ratio = c->s_sw.median / ref->s_sw.median;
			}
	r->seconds = (double)(now_ns() - progress_t0) / 1e9;
	progress_done();
	return r;
}

void bench_free(struct bench_results *r)
{
	if (!r)
		return;
	size_t ncells = (size_t)BM_COUNT * r->cfg.nsizes * r->cfg.nthreads;
	size_t nsetups = (size_t)BM_COUNT * r->cfg.nsizes;
	size_t len = sizeof(struct bench_results) + ncells * sizeof(struct bench_cell) +
		     nsetups * sizeof(struct bench_setup) + ncells * 4 * r->cfg.reps * sizeof(double);
	munmap(r, len);
}
