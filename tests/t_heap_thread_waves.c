/* SPDX-License-Identifier: MIT */
/*
 * Waves of threads that come and go (bench/mw_churn.c's pattern): each
 * thread frees the blocks a thread of the last wave left, makes blocks
 * of many classes, frees three in four and leaves the rest.  A new
 * thread takes the arena of one that exited, so a heap's memory is
 * bounded by the threads alive at once, not by the threads ever made:
 * over 300 waves of one thread the blocks come from one chunk, of two
 * threads from at most two (round robin, every arena took its turn and
 * kept a chunk and its slabs: 4 MiB mapped on a 2-CPU machine, 8 on
 * 8 CPUs), and half of each chunk at most resident.  Every block
 * is checked intact when freed.  With the metadata open: threads of
 * sealed heaps have no cache, whose exit gives the arena back.
 */
#include <pthread.h>

#include "t_heap.h"

enum { WAVES = 300, MADE = 200, LEFT = MADE / 4, TMAX = 2 };
#define CHUNK ((uintptr_t)1 << 20) /* the heap's chunks: 1 MiB, aligned */

static mpk_heap *h;
static mpk_domain *d;
static int nthreads;
static uintptr_t chunks[64]; /* distinct chunks blocks came from */
static int nchunks;
static pthread_mutex_t chunks_lock = PTHREAD_MUTEX_INITIALIZER;

struct worker {
	unsigned seed;
	void *left[LEFT]; /* from the last wave, freed here */
	unsigned left_tag[LEFT];
	void *keep[LEFT]; /* for the next wave */
	unsigned keep_tag[LEFT];
};
static struct worker w[TMAX];

static size_t size_of(unsigned tag)
{
	return 16 + (tag * 2654435761u >> 8) % 2033; /* 16 to 2,048 bytes */
}

static void chunk_seen(const void *p)
{
	uintptr_t c = (uintptr_t)p & ~(CHUNK - 1);

	pthread_mutex_lock(&chunks_lock);
	int i = 0;
	while (i < nchunks && chunks[i] != c)
		i++;
	if (i == nchunks && nchunks < (int)(sizeof(chunks) / sizeof(chunks[0])))
		chunks[nchunks++] = c;
	pthread_mutex_unlock(&chunks_lock);
}

static void *work(void *arg)
{
	struct worker *me = arg;
	void *p[MADE];
	unsigned tag[MADE];
	int k = 0;

	REQUIRE(mpk_set(d, MPK_RW) == 0);
	for (int i = 0; i < LEFT; i++)
		if (me->left[i]) {
			CHECK(t_intact(me->left[i], size_of(me->left_tag[i]), me->left_tag[i]));
			CHECK(mpk_heap_free(h, me->left[i]) == 0);
		}
	for (int i = 0; i < MADE; i++) {
		tag[i] = me->seed + (unsigned)i;
		REQUIRE(p[i] = mpk_heap_malloc(h, size_of(tag[i])));
		t_fill(p[i], size_of(tag[i]), tag[i]);
		chunk_seen(p[i]);
	}
	for (int i = 0; i < MADE; i++) {
		if (i % 4 == 3) {
			me->keep[k] = p[i], me->keep_tag[k++] = tag[i];
			continue;
		}
		CHECK(t_intact(p[i], size_of(tag[i]), tag[i]));
		CHECK(mpk_heap_free(h, p[i]) == 0);
	}
	return NULL;
}

/* WAVES waves of n threads on a new heap. */
static void waves(int n)
{
	struct mpk_heap_stats st;
	pthread_t t[TMAX];

	nthreads = n;
	nchunks = 0;
	memset(w, 0, sizeof(w));
	REQUIRE(h = mpk_heap_create(d, 0));
	for (int v = 0; v < WAVES; v++) {
		for (int k = 0; k < n; k++) {
			const struct worker *from = &w[(k + n - 1) % n];
			w[k].seed = (unsigned)(v * TMAX + k) * MADE;
			memcpy(w[k].left, from->keep, sizeof(w[k].left));
			memcpy(w[k].left_tag, from->keep_tag, sizeof(w[k].left_tag));
		}
		for (int k = 0; k < n; k++)
			REQUIRE(pthread_create(&t[k], NULL, work, &w[k]) == 0);
		for (int k = 0; k < n; k++)
			REQUIRE(pthread_join(t[k], NULL) == 0);
		REQUIRE(mpk_heap_stats_get(h, &st) == 0);
		/* Every cache went back: what the wave left is live. */
		if (st.blocks != (size_t)n * LEFT)
			t_fail("%d threads, wave %d: %zu blocks live, want %d", n, v, st.blocks,
			       n * LEFT);
	}
	size_t res = 0;
	for (int i = 0; i < nchunks; i++)
		res += t_resident((void *)chunks[i], CHUNK);
	printf("%d thread(s) a wave, %d waves: blocks from %d chunk(s), %zu KiB mapped at the "
	       "peak, %zu KiB of the chunks resident\n",
	       n, WAVES, nchunks, st.mapped_peak >> 10, res * (size_t)t_page() >> 10);
	CHECK(nchunks <= n);
	CHECK(st.mapped_peak <= (size_t)n * CHUNK);
	/* A thread's blocks are about 260 KB (those it makes and those it
	 * frees), in slabs of many classes: about 400 KiB resident a thread
	 * here, where round robin had 1.4 MiB over 4 chunks. */
	CHECK(res * (size_t)t_page() <= (size_t)n * (512u << 10));
	for (int k = 0; k < n; k++)
		for (int i = 0; i < LEFT; i++) {
			CHECK(t_intact(w[k].keep[i], size_of(w[k].keep_tag[i]), w[k].keep_tag[i]));
			CHECK(mpk_heap_free(h, w[k].keep[i]) == 0);
		}
	CHECK(mpk_heap_destroy(h) == 0);
}

int main(void)
{
	setenv("MPKIT_HEAP_META", "open", 1);
	t_backend();
	REQUIRE(d = mpk_domain_create("heap-waves", MPK_RW, 0));
	REQUIRE(mpk_set(d, MPK_RW) == 0);
	waves(1);
	waves(2);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
