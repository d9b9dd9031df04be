/*
 * Threads that come and go one after another: an exited thread's cache
 * mapping goes, wiped, to the next thread (no mmap()/munmap() a thread,
 * and its pages are already there: the kernel counts well under one page
 * fault a thread once warm).  Every thread's cached blocks go back as it
 * exits (the counts say so after each join), and what a thread left in its
 * cache is never handed out again by the next one that takes the mapping:
 * blocks of the same classes, made by the next threads while main holds
 * others, are all distinct and intact.  A heap destroyed while a wiped
 * mapping waits leaves nothing for a heap made next.  With the metadata
 * open: sealed heaps have no caches.
 */
#include <pthread.h>
#include <sys/resource.h>

#include "t_heap.h"

enum { THREADS = 60, MADE = 96, HELD = 32 };

static mpk_heap *h;
static mpk_domain *d;
static void *held[THREADS][HELD];

static size_t size_of(int i)
{
	return 16 + (size_t)(i % 24) * 40; /* 16 to 936 bytes: many classes */
}

/* Thread t (negative: keeps nothing; 0: no heap call at all) */
static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg, keep = t > 0 ? HELD : 0;
	void *p[MADE];

	REQUIRE(mpk_set(d, MPK_RW) == 0);
	if (!t)
		return NULL;
	if (t < 0)
		t = -t;
	for (int i = 0; i < MADE; i++) {
		REQUIRE(p[i] = mpk_heap_malloc(h, size_of(i)));
		t_fill(p[i], size_of(i), (unsigned)(t * MADE + i));
	}
	for (int i = 0; i < MADE; i++) {
		CHECK(t_intact(p[i], size_of(i), (unsigned)(t * MADE + i)));
		if (i < keep)
			held[t][i] = p[i]; /* for main, freed at the end */
		else
			CHECK(mpk_heap_free(h, p[i]) == 0); /* into this thread's cache */
	}
	return NULL;
}

static void run(int t)
{
	pthread_t th;

	REQUIRE(pthread_create(&th, NULL, worker, (void *)(intptr_t)t) == 0);
	REQUIRE(pthread_join(th, NULL) == 0);
}

static long faults(void)
{
	struct rusage ru;

	REQUIRE(getrusage(RUSAGE_SELF, &ru) == 0);
	return ru.ru_minflt;
}

int main(void)
{
	struct mpk_heap_stats st;

	setenv("MPKIT_HEAP_META", "open", 1);
	t_backend();
	REQUIRE(d = mpk_domain_create("heap-reuse", MPK_RW, 0));
	REQUIRE(h = mpk_heap_create(d, 0));
	REQUIRE(mpk_set(d, MPK_RW) == 0);

	for (int t = 1; t <= 8; t++)
		run(-t); /* warm: the first mapping, every arena's slabs */
	/* What a thread costs without the heap (mpkit's own per-thread
	 * state), then with it. */
	long f0 = faults();
	for (int t = 1; t < THREADS; t++)
		run(0);
	long f1 = faults();
	for (int t = 1; t < THREADS; t++)
		run(-t);
	long f = faults() - f1 - (f1 - f0);
	printf("%ld page faults for %d threads, beyond those of threads without the heap\n", f,
	       THREADS - 1);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
	/* A new mapping a thread would be 3 or more (its counts, the
	 * classes' slots); the pool makes it none. */
	CHECK(f < THREADS / 2);
#endif
	REQUIRE(mpk_heap_stats_get(h, &st) == 0);
	CHECK(st.blocks == 0);

	for (int t = 1; t < THREADS; t++) {
		run(t);
		/* Its cache went back: only what main holds is live. */
		REQUIRE(mpk_heap_stats_get(h, &st) == 0);
		if (st.blocks != (size_t)t * HELD)
			t_fail("after thread %d: %zu blocks live, want %d", t, st.blocks, t * HELD);
	}
	for (int t = 1; t < THREADS; t++)
		for (int i = 0; i < HELD; i++) {
			CHECK(t_intact(held[t][i], size_of(i), (unsigned)(t * MADE + i)));
			for (int u = 1; u < t; u++) /* no block twice */
				for (int j = 0; j < HELD; j++)
					if (held[u][j] == held[t][i])
						t_fail("block %p handed out to threads %d and %d",
						       held[t][i], u, t);
		}
	for (int t = 1; t < THREADS; t++)
		for (int i = 0; i < HELD; i++)
			CHECK(mpk_heap_free(h, held[t][i]) == 0);
	REQUIRE(mpk_heap_stats_get(h, &st) == 0);
	CHECK(st.blocks == 0 && st.bytes == 0);

	/* The heap goes while a wiped mapping waits; the next heap's
	 * threads start from nothing. */
	CHECK(mpk_heap_destroy(h) == 0);
	REQUIRE(h = mpk_heap_create(d, 0));
	run(1);
	REQUIRE(mpk_heap_stats_get(h, &st) == 0);
	CHECK(st.blocks == HELD);
	for (int i = 0; i < HELD; i++) {
		CHECK(t_intact(held[1][i], size_of(i), (unsigned)(MADE + i)));
		CHECK(mpk_heap_free(h, held[1][i]) == 0);
	}
	CHECK(mpk_heap_destroy(h) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
