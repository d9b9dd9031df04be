/* SPDX-License-Identifier: MIT */
/*
 * What `mpkit bench malloc`'s own workloads (bench/mw_*.c) share: a
 * seeded generator, the size argument, an allocation that never returns
 * NULL, and a block stamped with a value and checked when it is freed.
 * Each workload is a program of its own, linked to the C library only,
 * so that LD_PRELOAD puts the allocator under test beneath it and
 * nothing else; each does a fixed amount of work from a fixed seed and
 * prints a line that depends only on that work (never on how threads
 * interleave), which `mpkit bench malloc` compares across allocators.
 */
#ifndef MPKIT_BENCH_MW_H
#define MPKIT_BENCH_MW_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* xorshift64*: fast, and the same sequence everywhere. */
static inline uint64_t mw_rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

/* A size from lo to hi, more of them small (as programs ask). */
static inline size_t mw_size(uint64_t *s, size_t lo, size_t hi)
{
	uint64_t r = mw_rnd(s);
	size_t span = hi - lo + 1;

	return lo + (size_t)((r % span) * ((r >> 40) % span) / span);
}

/* The amount of work: argv[1] a number, or --smoke, or none (full). */
static inline long mw_amount(int argc, char **argv, long full, long smoke)
{
	char *end;

	if (argc < 2)
		return full;
	if (!strcmp(argv[1], "--smoke"))
		return smoke;
	long n = strtol(argv[1], &end, 10);
	if (argc > 2 || *end || n < 1) {
		fprintf(stderr, "usage: %s [--smoke|N]\n  N: the amount of work (full: %ld, --smoke: %ld)\n", argv[0],
			full, smoke);
		exit(2);
	}
	return n;
}

static inline void *mw_alloc(size_t n)
{
	void *p = malloc(n);

	/* p escapes: the compiler may not fold a malloc/free pair away */
	__asm__ volatile("" : : "r"(p) : "memory");
	if (!p) {
		fprintf(stderr, "out of memory: malloc(%zu)\n", n);
		exit(1);
	}
	return p;
}

/* A block of n >= 16 bytes carrying v: v at the start, its size (mod
 * 2^32) after, and v's low byte in the last byte (an overlap with another block
 * shows at either end). */
static inline void mw_stamp(unsigned char *p, size_t n, uint64_t v)
{
	memcpy(p, &v, 8);
	uint32_t m = (uint32_t)n;

	memcpy(p + 8, &m, 4);
	p[n - 1] = (unsigned char)v;
}

/* The block's value, or, when either end was changed, a fatal error. */
static inline uint64_t mw_check(const unsigned char *p, size_t n)
{
	uint64_t v;
	uint32_t m;

	memcpy(&v, p, 8);
	memcpy(&m, p + 8, 4);
	if (m != (uint32_t)n || p[n - 1] != (unsigned char)v) {
		fprintf(stderr, "a block of %zu bytes was changed under the program (%u, %#x)\n", n, m, p[n - 1]);
		exit(1);
	}
	return v;
}

/* Seconds on the monotonic clock, for a workload's phases. */
static inline double mw_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Whether MW_PHASES asks for a workload's phases timed on stderr (stdout,
 * which the bench compares, stays the same). */
static inline int mw_phases(void)
{
	const char *e = getenv("MW_PHASES");

	return e && *e && strcmp(e, "0") != 0;
}

#endif
