/* SPDX-License-Identifier: MIT */
/*
 * The methods, as a table: for each, how its region is made, and how it
 * closes and re-opens it, once (the checks) and k times in a hot loop of
 * its own (the samples), so that the loop adds nothing but the calls.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifdef MPKIT_BENCH_SODIUM
#include <sodium.h>
#endif

#include "engine.h"

#ifndef MADV_HUGEPAGE
#define MADV_HUGEPAGE 14
#define MADV_NOHUGEPAGE 15
#endif

/* Chunk size and most mappings for BM_MPROTECT_MANY (max_map_count is
 * 65530 by default; each chunk and its guard are two mappings). */
#define MANY_CHUNK ((size_t)64 << 10)
#define MANY_MAX 16384

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

static int fail(struct bench_setup *st, const char *what)
{
	st->status = BS_FAILED;
	snprintf(st->why, sizeof(st->why), "%s: %s", what, strerror(errno));
	return -1;
}

/*
 * An anonymous read/write mapping of len bytes at an align-aligned address,
 * between PROT_NONE guards marked MADV_DONTFORK, so that it never merges
 * with a neighbour (not even while it is PROT_NONE itself): every method
 * changes exactly its own mapping.
 */
static char *map_isolated(struct slot *s, size_t len, size_t align, int advice)
{
	size_t total = len + align + 2 * s->page;
	char *res = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED)
		return NULL;
	madvise(res, total, MADV_DONTFORK);
	char *p = (char *)(((uintptr_t)res + s->page + align - 1) & ~(uintptr_t)(align - 1));
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

/* ---- making the regions: 0, or -1 with st saying why ---- */

/* mpk_alloc() memory, 4 KiB pages like the raw mprotect row it is
 * compared with. */
static int up_alloc(struct slot *s, const char *domain, struct bench_setup *st)
{
	if (!(s->d = mpk_domain_create(domain, MPK_RW, 0)))
		return fail(st, "mpk_domain_create");
	if (!(s->base = mpk_alloc(s->d, s->size)))
		return fail(st, "mpk_alloc");
	madvise(s->base, s->size, MADV_NOHUGEPAGE);
	return 0;
}

/* A mapping of its own that the domain adopts: what mpk_alloc would give
 * with a mapping the kernel cannot merge with a neighbour (compare with
 * BM_MPROTECT), or on huge pages, populated before it is adopted so that
 * it gets them.  The domain owns the mapping then; the guards stay ours. */
static int adopted(struct slot *s, const char *domain, struct bench_setup *st, size_t align, int advice)
{
	if (!(s->base = map_isolated(s, s->size, align, advice)))
		return fail(st, "mmap");
	if (advice == MADV_HUGEPAGE)
		bench__touch(s);
	if (!(s->d = mpk_domain_create(domain, MPK_RW, 0)))
		return fail(st, "mpk_domain_create");
	if (mpk_adopt(s->d, s->base, s->size))
		return fail(st, "mpk_adopt");
	return 0;
}

static int up_isolated(struct slot *s, const char *domain, struct bench_setup *st)
{
	return adopted(s, domain, st, s->page, MADV_NOHUGEPAGE);
}

static int up_thp_adopted(struct slot *s, const char *domain, struct bench_setup *st)
{
	return adopted(s, domain, st, HUGE_2M, MADV_HUGEPAGE);
}

static int up_mapping(struct slot *s, const char *domain, struct bench_setup *st)
{
	(void)domain;
	if (!(s->base = map_isolated(s, s->size, s->page, MADV_NOHUGEPAGE)))
		return fail(st, "mmap");
	return 0;
}

static int up_thp_mapping(struct slot *s, const char *domain, struct bench_setup *st)
{
	(void)domain;
	if (!(s->base = map_isolated(s, s->size, HUGE_2M, MADV_HUGEPAGE)))
		return fail(st, "mmap");
	return 0;
}

/* The same size as 64 KiB mappings (fewer, larger ones past MANY_MAX),
 * a guard page between them. */
static int up_many(struct slot *s, const char *domain, struct bench_setup *st)
{
	size_t chunk = s->size < MANY_CHUNK ? s->size : MANY_CHUNK;

	(void)domain;
	while (s->size / chunk > MANY_MAX)
		chunk *= 2;
	s->chunk = chunk;
	s->n = s->size / chunk;
	s->stride = chunk + s->page;
	s->res_len = s->n * s->stride + s->page;
	s->res = mmap(NULL, s->res_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (s->res == MAP_FAILED) {
		s->res = NULL;
		return fail(st, "mmap");
	}
	madvise(s->res, s->res_len, MADV_DONTFORK);
	s->base = (char *)s->res + s->page;
	for (size_t i = 0; i < s->n; i++) {
		char *c = s->base + i * s->stride;
		if (mmap(c, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
			return fail(st, "mmap (small mappings)");
		madvise(c, chunk, MADV_NOHUGEPAGE);
	}
	return 0;
}

static int up_sodium(struct slot *s, const char *domain, struct bench_setup *st)
{
	(void)domain;
#ifdef MPKIT_BENCH_SODIUM
	if (!(s->sodium = sodium_malloc(s->size)))
		return fail(st, "sodium_malloc");
	s->base = s->sodium;
	return 0;
#else
	(void)s;
	errno = ENOTSUP;
	return fail(st, "libsodium");
#endif
}

/* ---- closing (1) and re-opening (0) once: 0 or -1 ---- */

static int toggle_enter(struct slot *s, int close)
{
	if (!close)
		return mpk_leave(&s->scope);
	s->scope = mpk_enter(s->d, MPK_NONE);
	return s->scope.saved < 0 ? -1 : 0;
}

static int toggle_set(struct slot *s, int close)
{
	return mpk_set(s->d, close ? MPK_NONE : MPK_RW);
}

static int toggle_mprotect(struct slot *s, int close)
{
	int rc = 0;

	for (size_t i = 0; i < s->n && !rc; i++)
		rc = mprotect(s->base + i * s->stride, s->chunk, close ? PROT_NONE : PROT_READ | PROT_WRITE);
	return rc;
}

static int toggle_sodium(struct slot *s, int close)
{
#ifdef MPKIT_BENCH_SODIUM
	return close ? sodium_mprotect_noaccess(s->sodium) : sodium_mprotect_readwrite(s->sodium);
#else
	(void)s;
	(void)close;
	return -1;
#endif
}

/* ---- k close + re-open pairs: the ORed results, negative if one failed ---- */

static int pairs_enter(struct slot *s, long k)
{
	int bad = 0;

	for (long i = 0; i < k; i++) {
		mpk_scope sc = mpk_enter(s->d, MPK_NONE);
		bad |= sc.saved;
		bad |= mpk_leave(&sc);
	}
	return bad;
}

static int pairs_set(struct slot *s, long k)
{
	int bad = 0;

	for (long i = 0; i < k; i++) {
		bad |= mpk_set(s->d, MPK_NONE);
		bad |= mpk_set(s->d, MPK_RW);
	}
	return bad;
}

/* One mapping: also the mpkit rows' same-region pairs (bench__raw_pairs). */
static int pairs_mprotect(struct slot *s, long k)
{
	int bad = 0;

	for (long i = 0; i < k; i++) {
		bad |= mprotect(s->base, s->size, PROT_NONE);
		bad |= mprotect(s->base, s->size, PROT_READ | PROT_WRITE);
	}
	return bad;
}

static int pairs_many(struct slot *s, long k)
{
	int bad = 0;

	for (long i = 0; i < k; i++) {
		for (size_t c = 0; c < s->n; c++)
			bad |= mprotect(s->base + c * s->stride, s->chunk, PROT_NONE);
		for (size_t c = 0; c < s->n; c++)
			bad |= mprotect(s->base + c * s->stride, s->chunk, PROT_READ | PROT_WRITE);
	}
	return bad;
}

static int pairs_sodium(struct slot *s, long k)
{
	int bad = 0;

#ifdef MPKIT_BENCH_SODIUM
	for (long i = 0; i < k; i++) {
		bad |= sodium_mprotect_noaccess(s->sodium);
		bad |= sodium_mprotect_readwrite(s->sodium);
	}
#else
	(void)s;
	(void)k;
#endif
	return bad;
}

static const struct method_ops {
	const char *domain; /* the mpkit domain's name */
	int (*up)(struct slot *s, const char *domain, struct bench_setup *st);
	int (*toggle)(struct slot *s, int close);
	int (*pairs)(struct slot *s, long k);
} ops[BM_COUNT] = {
	[BM_HW_ENTER] = { "bench-hw-enter", up_alloc, toggle_enter, pairs_enter },
	[BM_HW_SET] = { "bench-hw-set", up_alloc, toggle_set, pairs_set },
	[BM_SOFT_ENTER] = { "bench-soft-enter", up_alloc, toggle_enter, pairs_enter },
	[BM_SOFT_SET] = { "bench-soft-set", up_alloc, toggle_set, pairs_set },
	[BM_SOFT_ISO] = { "bench-soft-isolated", up_isolated, toggle_set, pairs_set },
	[BM_SOFT_THP] = { "bench-soft-thp", up_thp_adopted, toggle_set, pairs_set },
	[BM_MPROTECT] = { NULL, up_mapping, toggle_mprotect, pairs_mprotect },
	[BM_MPROTECT_THP] = { NULL, up_thp_mapping, toggle_mprotect, pairs_mprotect },
	[BM_MPROTECT_MANY] = { NULL, up_many, toggle_mprotect, pairs_many },
	[BM_SODIUM] = { NULL, up_sodium, toggle_sodium, pairs_sodium },
};

uint64_t bench__pairs(struct slot *s, long k)
{
	double t0 = now_ns();
	int bad = ops[s->m].pairs(s, k);
	double t1 = now_ns();

	if (bad < 0)
		s->errors++;
	return t1 - t0;
}

uint64_t bench__raw_pairs(struct slot *s, long k)
{
	double t0 = now_ns();
	int bad = pairs_mprotect(s, k);
	double t1 = now_ns();

	if (bad < 0)
		s->errors++;
	return t1 - t0;
}

/* ---- a region's life ---- */

/* What the region really is: mappings, huge and locked pages. */
static void note_region(const struct slot *s, struct bench_setup *st)
{
	st->mappings = (long)s->n;
	st->chunk = s->chunk;
	st->huge_kb = bench_smaps_kb(s->base, s->chunk, "AnonHugePages");
	if (s->n > 1 && st->huge_kb >= 0)
		st->huge_kb *= (long)s->n; /* all chunks alike; reading 16384 is slow */
	st->locked_kb = s->m == BM_SODIUM ? bench_smaps_kb(s->base, s->size, "Locked") : -1;
}

/* Closed, it faults; re-opened, it reads and writes, its contents kept. */
static int verify(struct slot *s, struct bench_setup *st)
{
	const struct method_ops *o = &ops[s->m];
	unsigned char *first = (unsigned char *)s->base;
	unsigned char *last = (unsigned char *)s->base + (s->n - 1) * s->stride + s->chunk - 1;
	unsigned char v = 0;

	*first = 0x5a;
	*last = 0xa5;
	if (o->toggle(s, 1))
		return fail(st, "closing");
	int c1 = bench__probe(first, 0, 0, &v), c2 = bench__probe(last, 0, 0, &v);
	if (o->toggle(s, 0))
		return fail(st, "re-opening");
	if (!c1 || !c2) {
		st->status = BS_FAILED;
		snprintf(st->why, sizeof(st->why), "verification: a read of the closed region did not fault");
		return -1;
	}
	unsigned char a = 0, b = 0;
	int w1 = bench__probe(first, 1, 0x5b, NULL), w2 = bench__probe(last, 1, 0xa6, NULL);
	int r1 = bench__probe(first, 0, 0, &a), r2 = bench__probe(last, 0, 0, &b);
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

int bench__slot_up(struct slot *s, int m, size_t size, struct bench_setup *st)
{
	memset(s, 0, sizeof(*s));
	s->m = m;
	s->size = size;
	s->n = 1;
	s->chunk = s->stride = size;
	s->page = (size_t)sysconf(_SC_PAGESIZE);
	if (ops[m].up(s, ops[m].domain, st))
		return -1;
	s->up = 1;
	bench__touch(s);
	note_region(s, st);
	return verify(s, st);
}

void bench__slot_down(struct slot *s)
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
