/*
 * A heap made before mpk_lockdown() and destroyed after it, then threads.
 * The last heap takes the heap's metadata area with it, and the filter
 * covers that area: were it unmapped, the kernel would place the next
 * thread's stack there and glibc's mprotect() of it would be refused,
 * pthread_create() and mpk_thread_create() failing with EPERM under
 * MPK_LOCK_ERRNO, the process killed by SIGSYS by default.  Each mode runs
 * in a child, with the metadata area open (plain memory apart from the
 * windows: the soft default, asked for on hw) and as the backend chooses.
 * Threads get the default stack and a 1 MiB one: where the kernel leaves
 * no room below the area (no THP alignment, as on 6.1), only a stack
 * smaller than the area fits in the hole.
 */
#include "t_giveback.h"

#include <pthread.h>

#define THREADS 50

static void *run(void *arg)
{
	return arg;
}

static void scenario(unsigned flags, const char *meta)
{
	pthread_attr_t small;
	mpk_domain *d;
	mpk_heap *h;
	pthread_t t;
	int e;

	(void)meta; /* t_giveback_child() set it */
	REQUIRE((d = mpk_domain_create("gone", MPK_RW, 0)));
	REQUIRE((h = mpk_heap_create(d, 0)));
	REQUIRE(mpk_heap_malloc(h, 100));
	REQUIRE(mpk_lockdown(flags) == 0);
	REQUIRE(mpk_heap_destroy(h) == 0);
	REQUIRE(pthread_attr_init(&small) == 0);
	REQUIRE(pthread_attr_setstacksize(&small, 1 << 20) == 0);
	for (int i = 0; i < THREADS; i++) {
		pthread_attr_t *a = i % 2 ? &small : NULL;
		if ((e = pthread_create(&t, a, run, NULL))) {
			t_fail("pthread_create #%d: %s", i, strerror(e));
			return;
		}
		pthread_join(t, NULL);
		if (mpk_thread_create(&t, a, run, NULL)) {
			t_fail("mpk_thread_create #%d: %s", i, strerror(errno));
			return;
		}
		pthread_join(t, NULL);
	}
	pthread_attr_destroy(&small);
}

int main(void)
{
	static const char *const metas[] = { "open", NULL };

	for (int m = 0; m < 2; m++)
		for (int e = 0; e < 2; e++)
			if (t_giveback_child(scenario, e ? 0 : MPK_LOCK_ERRNO, metas[m]))
				printf("%s, metadata %s: %d pthread_create and %d mpk_thread_create "
				       "after the heap went\n", e ? "default" : "MPK_LOCK_ERRNO",
				       metas[m] ? metas[m] : "as chosen", THREADS, THREADS);
	return t_done();
}
