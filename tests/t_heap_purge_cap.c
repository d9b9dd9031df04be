/*
 * The purge cap: free runs beyond half the arena's memory go back to the
 * kernel at once, those below it wait for the decay.  A program that frees
 * 40% of its heap in one go (a tree dropped before the next is built)
 * keeps those pages resident for its next blocks; one that frees 75% keeps
 * at most half resident.  (mincore, not the process's RSS: sanitizers keep
 * shadow memory resident.)
 */
#include "t_heap.h"

#include <time.h>

#define MiB (1u << 20)
#define RUNS 2000
#define LEN 16000 /* a page run, too short for the thread caches */

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Resident bytes of the runs i with i % 20 in [lo, hi). */
static size_t resident(void *const *r, int lo, int hi)
{
	size_t pages = 0;

	for (int i = 0; i < RUNS; i++)
		if (i % 20 >= lo && i % 20 < hi)
			pages += t_resident(r[i], LEN);
	return pages * t_page();
}

int main(void)
{
	static void *r[RUNS];
	struct mpk_heap_stats st;

	t_backend();
	mpk_domain *d = mpk_domain_create("heap-purge-cap", MPK_RW, 0);
	REQUIRE(d);
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h);
	for (int i = 0; i < RUNS; i++) {
		REQUIRE(r[i] = mpk_heap_malloc(h, LEN));
		memset(r[i], 1, LEN);
	}
	REQUIRE(mpk_heap_stats_get(h, &st) == 0);
	size_t mapped = st.mapped;
	CHECK(mapped >= (size_t)RUNS * LEN && mapped < (size_t)RUNS * LEN * 2);

	/* 40%, in holes (every chunk stays in use): below the cap, young. */
	double t0 = now_ms();
	for (int i = 0; i < RUNS; i++)
		if (i % 20 < 8)
			CHECK(mpk_heap_free(h, r[i]) == 0);
	size_t kept = resident(r, 0, 8);
	/* A slow machine (valgrind, TSan) may have let the decay in. */
	if (now_ms() - t0 < 200 && kept < (size_t)RUNS * 8 / 20 * LEN)
		t_fail("%zu KiB of %zu KiB freed below the cap were purged at once", kept >> 10,
		       (size_t)RUNS * 8 / 20 * LEN >> 10);

	/* 75% in all: past the cap, the oldest go until half the cap is
	 * left; at most the cap stays resident. */
	for (int i = 0; i < RUNS; i++)
		if (i % 20 >= 8 && i % 20 < 15)
			CHECK(mpk_heap_free(h, r[i]) == 0);
	size_t left = resident(r, 0, 15);
	if (left > mapped / 2)
		t_fail("%zu KiB of freed runs resident, past the cap (%zu KiB)", left >> 10, mapped / 2 >> 10);
	CHECK(left < (size_t)RUNS * 15 / 20 * LEN); /* something went */

	/* The runs still in use are untouched, and the heap still serves. */
	for (int i = 0; i < RUNS; i++)
		if (i % 20 >= 15)
			CHECK(((unsigned char *)r[i])[LEN - 1] == 1);
	void *again = mpk_heap_malloc(h, LEN);
	CHECK(again != NULL);
	memset(again, 2, LEN);
	CHECK(mpk_heap_free(h, again) == 0);
	for (int i = 0; i < RUNS; i++)
		if (i % 20 >= 15)
			CHECK(mpk_heap_free(h, r[i]) == 0);
	CHECK(mpk_heap_destroy(h) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
