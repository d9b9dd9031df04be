/*
 * The heap's fast paths ask whether the thread may still write the heap's
 * domain without looking its rights up on every call (a keyless domain:
 * a snapshot of the thread's soft rights, core.h).  Whatever moves those
 * rights between two calls must be seen: the thread's own mpk_set(),
 * mpk_set_all() from another thread, a scope left.  Each step warms the
 * fast path with RW, moves the rights, then mallocs and frees again: the
 * calls succeed (had the heap trusted a stale answer, writing a block's
 * header would have faulted here), leave the rights as they were, and the
 * new block is exactly as open as the domain.
 */
#include <pthread.h>

#include "t_heap.h"

static mpk_domain *d;
static mpk_heap *h;

/* With RW, a few pairs: the thread's cache is warm and the fast path on. */
static void warm(void)
{
	REQUIRE(mpk_set(d, MPK_RW) == 0);
	for (int i = 0; i < 64; i++) {
		void *p = mpk_heap_malloc(h, 48);
		REQUIRE(p);
		*(volatile char *)p = 1;
		CHECK(mpk_heap_free(h, p) == 0);
	}
}

/* A pair now that the rights are r: both calls work, the block follows r. */
static void pair_at(int r)
{
	void *p = mpk_heap_malloc(h, 48);

	CHECK(p != NULL);
	if (!p)
		return;
	CHECK_RIGHTS(d, p, r);
	CHECK(mpk_heap_free(h, p) == 0);
	CHECK(mpk_get(d) == r);
}

static void *set_all_none(void *arg)
{
	(void)arg;
	CHECK(mpk_set_all(d, MPK_NONE) == 0);
	return NULL;
}

int main(void)
{
	t_backend();
	REQUIRE((d = mpk_domain_create("heap-moved", MPK_RW, 0)));
	REQUIRE((h = mpk_heap_create(d, 0)));

	/* The thread's own change. */
	warm();
	REQUIRE(mpk_set(d, MPK_READ) == 0);
	pair_at(MPK_READ);

	/* Another thread closes the domain for every thread. */
	warm();
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, set_all_none, NULL) == 0);
	REQUIRE(pthread_join(t, NULL) == 0);
	pair_at(MPK_NONE);

	/* A scope that opened it is left. */
	warm();
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	MPK_WITH(d, MPK_RW) {
		void *p = mpk_heap_malloc(h, 48);
		CHECK(p != NULL);
		CHECK(mpk_heap_free(h, p) == 0);
	}
	pair_at(MPK_NONE);

	/* And RW again: the fast path is back, the blocks writable. */
	warm();
	pair_at(MPK_RW);

	CHECK(mpk_heap_destroy(h) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
