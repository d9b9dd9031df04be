/*
 * A thread freeing blocks another thread allocated (another arena's)
 * gives them back without taking a lock: they go onto that arena's
 * remote list, lock-free, and its next refill takes them (counted here by
 * wrapping pthread_mutex_lock; not under TSan, which wraps it itself).
 * Then: the blocks come back to the first thread without the heap growing,
 * the counts say they are free, a second free of a listed block is named
 * a double free, and a link rewritten by a write after free (not under
 * ASan, which reports that write itself) ends the list without handing
 * out a bad block.  With the metadata open: sealed there are no caches
 * and no remote lists (every free takes its arena's lock, in the metadata).
 */
#include <dlfcn.h>
#include <pthread.h>

#include "t_heap.h"

#ifndef __SANITIZE_THREAD__
#define COUNT_LOCKS 1
static __thread int counting;
static long locks;
static int (*real_lock)(pthread_mutex_t *);

__attribute__((constructor(101))) static void find_lock(void)
{
	real_lock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_lock");
}

/* mpkit's calls come here (the program's definition wins). */
int pthread_mutex_lock(pthread_mutex_t *m)
{
	if (!real_lock)
		find_lock();
	if (counting)
		__atomic_add_fetch(&locks, 1, __ATOMIC_RELAXED);
	return real_lock(m);
}
#endif

enum { N = 2000, SIZE = 64 };

static mpk_heap *h;
static mpk_domain *d;
static void *blk[N];

static void *freer(void *arg)
{
	(void)arg;
	REQUIRE(mpk_set(d, MPK_RW) == 0);
	void *mine = mpk_heap_malloc(h, SIZE); /* this thread's cache and arena */
	REQUIRE(mine);
	CHECK(mpk_heap_free(h, mine) == 0);
#ifdef COUNT_LOCKS
	counting = 1;
#endif
	for (int i = 0; i < N; i++)
		CHECK(mpk_heap_free(h, blk[i]) == 0);
#ifdef COUNT_LOCKS
	counting = 0;
#endif
	return NULL; /* its cache goes back as it exits */
}

static void free_all_elsewhere(void)
{
	pthread_t t;

	REQUIRE(pthread_create(&t, NULL, freer, NULL) == 0);
	REQUIRE(pthread_join(t, NULL) == 0);
}

int main(void)
{
	struct mpk_heap_stats st, st0;

	setenv("MPKIT_HEAP_META", "open", 1);
	t_backend();
	REQUIRE(d = mpk_domain_create("heap-remote", MPK_RW, 0));
	REQUIRE(h = mpk_heap_create(d, 0));
	REQUIRE(mpk_set(d, MPK_RW) == 0);

	for (int i = 0; i < N; i++) {
		REQUIRE(blk[i] = mpk_heap_malloc(h, SIZE));
		t_fill(blk[i], SIZE, (unsigned)i);
	}
	free_all_elsewhere();
#ifdef COUNT_LOCKS
	printf("%ld locks taken for %d frees of another arena's blocks\n", locks, N);
	CHECK(locks < N / 64);
#endif
	REQUIRE(mpk_heap_stats_get(h, &st0) == 0);
	CHECK(st0.blocks == 0);

	/* They come back here: no new memory for as many again. */
	for (int i = 0; i < N; i++) {
		REQUIRE(blk[i] = mpk_heap_malloc(h, SIZE));
		t_fill(blk[i], SIZE, (unsigned)i + N);
	}
	REQUIRE(mpk_heap_stats_get(h, &st) == 0);
	CHECK(st.mapped == st0.mapped);
	for (int i = 0; i < N; i++)
		CHECK(t_intact(blk[i], SIZE, (unsigned)i + N));

	/* Freed elsewhere, waiting on the list: a second free is named. */
	free_all_elsewhere();
	t_misuse_catch();
	CHECK(mpk_heap_free(h, blk[7]) == -1 && errno == EINVAL);
	CHECK_MISUSE(MPK_MISUSE_DOUBLE_FREE, blk[7]);
	REQUIRE(mpk_misuse_handler_set(NULL, NULL) == 0);

#ifndef __SANITIZE_ADDRESS__
	/* A write after free into every listed block (their links): the
	 * list ends at the first, nothing bad is handed out. */
	for (int i = 0; i < N; i++)
		memset(blk[i], 0x41, 8);
#endif
	static void *again[N];
	for (int i = 0; i < N; i++) {
		REQUIRE(again[i] = mpk_heap_malloc(h, SIZE));
		t_fill(again[i], SIZE, (unsigned)i);
	}
	for (int i = 0; i < N; i++)
		CHECK(t_intact(again[i], SIZE, (unsigned)i)); /* no block twice */
	for (int i = 0; i < N; i++)
		CHECK(mpk_heap_free(h, again[i]) == 0);
	CHECK(mpk_heap_destroy(h) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
