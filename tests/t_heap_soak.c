/*
 * A soak in short form: 4 threads make random heap calls on one heap for a
 * bounded time (MPKIT_SOAK_SECONDS, default 2; MPKIT_SOAK_SEED picks the
 * seed, printed): malloc, calloc, aligned_alloc, realloc that grows and
 * shrinks, frees, and blocks passed to other threads through shared slots
 * and freed there.  Every block holds a pattern of its own address and
 * size, checked before it is changed, moved or freed; calloc'd blocks are
 * zero; realloc keeps the prefix.  At the end nothing is live.
 */
#include <pthread.h>
#include <time.h>

#include "t_heap.h"

enum { THREADS = 4, LOCAL = 128, SHARED = 64 };

static mpk_domain *d;
static mpk_heap *h;
static void *volatile shared[SHARED];
static double deadline;
static unsigned long long seed;
static unsigned long ops[THREADS], bad[THREADS];

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static inline uint8_t pat(const uint8_t *p, size_t i)
{
	return (uint8_t)(((uintptr_t)p >> 4) * 31 + i * 7);
}

/* A block: its size in the first 8 bytes, then the pattern (first and
 * last 256 bytes checked; the middle by a stride). */
static void fill(uint8_t *p, size_t n)
{
	memcpy(p, &n, 8);
	for (size_t i = 8; i < n; i++)
		p[i] = pat(p, i);
}

static size_t stride(size_t n)
{
	return n > 4096 ? 61 : 1;
}

static int intact(const uint8_t *p, size_t n, size_t upto)
{
	size_t m;
	memcpy(&m, p, 8);
	if (m != n)
		return 0;
	for (size_t i = 8; i < upto; i += (i < 256 || i + 256 > upto) ? 1 : stride(n))
		if (p[i] != pat(p, i))
			return 0;
	return 1;
}

static size_t pick_size(uint64_t *x)
{
	uint64_t r = rnd(x);
	return 8 + ((r >> 8) & ((1u << (r % 18)) - 1)); /* 8 B to 128 KiB, log-uniform */
}

static void *worker(void *arg)
{
	int id = (int)(uintptr_t)arg;
	uint8_t *mine[LOCAL] = { 0 };
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + (uint64_t)id * 2654435761u + 1;

	REQUIRE(mpk_set(d, MPK_RW) == 0);
	while (now() < deadline) {
		for (int k = 0; k < 256; k++, ops[id]++) {
			uint64_t r = rnd(&x);
			unsigned i = (unsigned)(r >> 32) % LOCAL;
			uint8_t *p = mine[i];
			size_t n = p ? *(size_t *)p : 0;
			if (p && !intact(p, n, n))
				bad[id]++;
			switch (r % 10) {
			case 0: case 1: case 2: { /* a new block */
				size_t m = pick_size(&x);
				uint8_t *q;
				if (r & 0x100) {
					q = mpk_heap_calloc(h, 1, m);
					for (size_t j = 0; q && j < m; j += stride(m))
						bad[id] += q[j] != 0;
				} else if (r & 0x200) {
					q = mpk_heap_aligned_alloc(h, (size_t)16 << ((r >> 12) % 9), m);
					if (q && ((uintptr_t)q & (((size_t)16 << ((r >> 12) % 9)) - 1)))
						bad[id]++;
				} else {
					q = mpk_heap_malloc(h, m);
				}
				REQUIRE(q);
				fill(q, m);
				if (p)
					REQUIRE(mpk_heap_free(h, p) == 0);
				mine[i] = q;
				break;
			}
			case 3: case 4: /* realloc: grow or shrink */
				if (p) {
					size_t m = (r & 0x400) ? n * 2 + 8 : pick_size(&x);
					if (m > ((size_t)1 << 20))
						m = 64;
					uint8_t *q = mpk_heap_realloc(h, p, m);
					REQUIRE(q);
					/* The prefix moved with it; the pattern is of
					 * the old address, so check it by offset. */
					size_t keep = m < n ? m : n;
					for (size_t j = 8; j < keep; j += stride(keep))
						bad[id] += q[j] != (uint8_t)(((uintptr_t)p >> 4) * 31 + j * 7);
					fill(q, m);
					mine[i] = q;
				}
				break;
			case 5: case 6: { /* pass it on, take another thread's */
				unsigned s = (unsigned)(r >> 40) % SHARED;
				uint8_t *q = __atomic_exchange_n(&shared[s], p, __ATOMIC_ACQ_REL);
				if (q && !intact(q, *(size_t *)q, *(size_t *)q))
					bad[id]++;
				mine[i] = q;
				break;
			}
			case 7:
				if (p) {
					bad[id] += mpk_heap_usable_size(h, p) < n;
					break;
				}
				/* fall through */
			default:
				if (p)
					REQUIRE(mpk_heap_free(h, p) == 0);
				mine[i] = NULL;
			}
		}
	}
	for (int i = 0; i < LOCAL; i++)
		if (mine[i]) {
			bad[id] += !intact(mine[i], *(size_t *)mine[i], *(size_t *)mine[i]);
			REQUIRE(mpk_heap_free(h, mine[i]) == 0);
		}
	return NULL;
}

int main(void)
{
	pthread_t t[THREADS];
	const char *e = getenv("MPKIT_SOAK_SECONDS"), *s = getenv("MPKIT_SOAK_SEED");
	double secs = e ? atof(e) : 2;
	struct mpk_heap_stats st;

	t_backend();
	seed = s ? strtoull(s, NULL, 0) : 20261203;
	printf("seed %llu (MPKIT_SOAK_SEED), %.1f s (MPKIT_SOAK_SECONDS)\n", seed, secs);
	REQUIRE(d = mpk_domain_create("soak", MPK_RW, 0));
	REQUIRE(h = mpk_heap_create(d, 0));
	deadline = now() + secs;
	for (int i = 0; i < THREADS; i++)
		REQUIRE(pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i) == 0);
	unsigned long total = 0, wrong = 0;
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		total += ops[i];
		wrong += bad[i];
	}
	for (int i = 0; i < SHARED; i++)
		if (shared[i]) {
			uint8_t *q = shared[i];
			wrong += !intact(q, *(size_t *)q, *(size_t *)q);
			CHECK(mpk_heap_free(h, q) == 0);
		}
	printf("%lu operations, %lu bad\n", total, wrong);
	CHECK(wrong == 0);
	CHECK(total > 1000);
	REQUIRE(mpk_heap_stats_get(h, &st) == 0);
	if (st.blocks || st.bytes)
		t_fail("%zu blocks, %zu bytes still live", st.blocks, st.bytes);
	CHECK(mpk_heap_destroy(h) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
