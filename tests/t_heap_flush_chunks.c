/*
 * A thread's cache gives its blocks back in batches (flushes), under its
 * arena's lock, keeping the chunks it found for the next blocks; blocks
 * freed in an order of their own (a shuffle here, as a tree is freed)
 * come from many chunks in turn, more than it keeps at once, and slabs
 * empty and chunks go back as they do.  Then: every block is back (the
 * counts say none is live once the thread's cache went with it), the
 * chunks went back, and the blocks handed out again are each handed out
 * once (each keeps what was written in it).  With the metadata open:
 * sealed heaps have no caches.
 */
#include <pthread.h>

#include "t_heap.h"

enum { N = 160000, SIZE = 100 }; /* 128-byte slots: about 20 chunks of 1 MiB */

static mpk_heap *h;
static mpk_domain *d;
static void **blk;
static size_t peak;

static void shuffle(void **v, size_t n, uint64_t s)
{
	for (size_t i = n - 1; i > 0; i--) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		size_t j = (size_t)(s >> 33) % (i + 1);
		void *t = v[i];
		v[i] = v[j];
		v[j] = t;
	}
}

/* One thread, one arena: its flushes give its own blocks back. */
static void *work(void *arg)
{
	struct mpk_heap_stats st;

	(void)arg;
	REQUIRE(mpk_set(d, MPK_RW) == 0);
	for (int i = 0; i < N; i++) {
		REQUIRE(blk[i] = mpk_heap_malloc(h, SIZE));
		t_fill(blk[i], SIZE, (unsigned)i);
	}
	REQUIRE(mpk_heap_stats_get(h, &st) == 0);
	CHECK(st.blocks == N);
	peak = st.mapped;
	shuffle(blk, N, 0x2545f4914f6cdd1dull);
	for (int i = 0; i < N; i++)
		CHECK(mpk_heap_free(h, blk[i]) == 0);
	/* Half again, from the slabs the frees left: none twice. */
	for (int i = 0; i < N / 2; i++) {
		REQUIRE(blk[i] = mpk_heap_malloc(h, SIZE));
		t_fill(blk[i], SIZE, (unsigned)i + N);
	}
	for (int i = 0; i < N / 2; i++)
		CHECK(t_intact(blk[i], SIZE, (unsigned)i + N));
	shuffle(blk, N / 2, 0x9e3779b97f4a7c15ull);
	for (int i = 0; i < N / 2; i++)
		CHECK(mpk_heap_free(h, blk[i]) == 0);
	return NULL; /* its cache goes back as it exits */
}

int main(void)
{
	struct mpk_heap_stats st;
	pthread_t t;

	setenv("MPKIT_HEAP_META", "open", 1);
	t_backend();
	REQUIRE(blk = calloc(N, sizeof(*blk)));
	REQUIRE(d = mpk_domain_create("heap-flush", MPK_RW, 0));
	REQUIRE(h = mpk_heap_create(d, 0));
	REQUIRE(pthread_create(&t, NULL, work, NULL) == 0);
	REQUIRE(pthread_join(t, NULL) == 0);
	REQUIRE(mpk_heap_stats_get(h, &st) == 0);
	printf("%d blocks in %zu KiB, then %zu blocks live, %zu KiB mapped\n", N, peak >> 10,
	       st.blocks, st.mapped >> 10);
	CHECK(peak >= (size_t)16 << 20); /* more chunks than a flush keeps */
	CHECK(st.blocks == 0 && st.bytes == 0);
	CHECK(st.mapped <= peak / 8); /* emptied chunks went back */
	CHECK(mpk_heap_destroy(h) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	free(blk);
	return t_done();
}
