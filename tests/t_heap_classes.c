/*
 * Size classes above 3.5 KiB: blocks up to 32 KiB share slabs, eight
 * classes per power of two.  2,000 blocks of 4,400 bytes take about
 * 2,000 x 4,400 bytes, not two pages each (their usable size is within an
 * eighth, they share pages, the heap maps no more than they need); every
 * size from 3 KiB to 40 KiB round-trips with its neighbours intact, and
 * at each class boundary the size fits exactly; large classes honour
 * aligned_alloc(); realloc carries the bytes across classes; and a double
 * free, an interior pointer and an overflow into the next block's header
 * are reported on the new classes as on the old ones.
 */
#include <stdint.h>

#include "t_heap.h"

#define HDRB 16 /* the header of an ordinary heap's block */

/* The block's usable bytes, the heap's word for its class. */
static size_t cap_of(mpk_heap *h, size_t size)
{
	void *p = mpk_heap_malloc(h, size);
	REQUIRE(p);
	size_t cap = mpk_heap_usable_size(h, p);
	REQUIRE(mpk_heap_free(h, p) == 0);
	return cap;
}

/* Two blocks of size at once, written whole, freed: 1 if both held. */
static int round_trip(mpk_heap *h, size_t size, unsigned seed)
{
	unsigned char *a = mpk_heap_malloc(h, size), *b = mpk_heap_malloc(h, size);

	if (!a || !b)
		return 0;
	t_fill(a, size, seed);
	t_fill(b, size, seed + 1);
	int ok = t_intact(a, size, seed) && t_intact(b, size, seed + 1) &&
		 mpk_heap_usable_size(h, a) >= size && (uintptr_t)a % 16 == 0;
	return mpk_heap_free(h, b) == 0 && mpk_heap_free(h, a) == 0 && ok;
}

static void packed(mpk_heap *h)
{
	enum { N = 2000, SIZE = 4400 };
	static unsigned char *p[N];
	struct mpk_heap_stats st0, st;
	size_t offpage = 0;

	REQUIRE(mpk_heap_stats_get(h, &st0) == 0);
	for (int i = 0; i < N; i++) {
		REQUIRE(p[i] = mpk_heap_malloc(h, SIZE));
		t_fill(p[i], SIZE, (unsigned)i);
		/* A page run's block starts a header past a page. */
		offpage += ((uintptr_t)p[i] & 4095) != HDRB;
	}
	size_t cap = mpk_heap_usable_size(h, p[0]);
	CHECK(cap >= SIZE && (cap + HDRB) * 8 <= (SIZE + HDRB) * 9);
	CHECK(offpage > N / 2);
	REQUIRE(mpk_heap_stats_get(h, &st) == 0);
	CHECK(st.blocks - st0.blocks == N);
	CHECK(st.bytes - st0.bytes == (size_t)N * cap);
	/* Mapped: the blocks within an eighth, and less than two chunks'
	 * slack (two pages a block would be 16 MiB). */
	size_t need = (size_t)N * (SIZE + HDRB) / 8 * 9;
	if (st.mapped - st0.mapped > need + ((size_t)2 << 20))
		t_fail("%d blocks of %d B: %zu KiB mapped for %zu KiB", N, SIZE,
		       (st.mapped - st0.mapped) >> 10, need >> 10);
	for (int i = 0; i < N; i++) {
		CHECK(t_intact(p[i], SIZE, (unsigned)i));
		CHECK(mpk_heap_free(h, p[i]) == 0);
	}
}

/* Every size from 3 KiB to 40 KiB; the class boundaries seen. */
static void sizes(mpk_heap *h)
{
	size_t prev = 0, classes = 0;

	for (size_t n = 3072; n <= 40960; n++) {
		size_t cap = cap_of(h, n);
		if (cap < n)
			t_fail("%zu B: usable %zu", n, cap);
		if (n % 61 == 0 || cap != prev)
			CHECK(round_trip(h, n, (unsigned)n));
		if (cap == prev)
			continue;
		/* A new class (or page run): the last size fitted the last
		 * block exactly, and up to 32 KiB a class is at most an eighth
		 * above what it holds. */
		if (prev) {
			CHECK(cap_of(h, prev) == prev && round_trip(h, prev, 7));
			classes++;
		}
		if (n + HDRB <= 32768 && n > 4096 && (cap + HDRB) * 8 > (n + HDRB) * 9)
			t_fail("%zu B: usable %zu, more than an eighth over", n, cap);
		prev = cap;
	}
	/* 3 to 4 KiB in steps of a quarter and less, then eight per power of
	 * two to 32 KiB, then a page at a time. */
	CHECK(classes >= 3 + 24 + 2);
}

static void aligned(mpk_heap *h)
{
	const size_t sz[] = { 3700, 4400, 9000, 20000, 30000 };

	for (size_t i = 0; i < sizeof(sz) / sizeof(*sz); i++)
		for (size_t al = 16; al <= 8192; al *= 2) {
			unsigned char *p = mpk_heap_aligned_alloc(h, al, sz[i]);
			REQUIRE(p);
			CHECK((uintptr_t)p % al == 0);
			CHECK(mpk_heap_usable_size(h, p) >= sz[i]);
			t_fill(p, sz[i], (unsigned)al);
			CHECK(t_intact(p, sz[i], (unsigned)al));
			CHECK(mpk_heap_free(h, p) == 0);
		}
}

static void reallocs(mpk_heap *h)
{
	const size_t steps[] = { 100, 3600, 4400, 4700, 9000, 20000, 32000, 40000,
				 200000, 30000, 5000, 3700, 100 };
	size_t have = steps[0];
	unsigned char *p = mpk_heap_malloc(h, have);

	REQUIRE(p);
	t_fill(p, have, 99);
	for (size_t i = 1; i < sizeof(steps) / sizeof(*steps); i++) {
		size_t keep = have < steps[i] ? have : steps[i];
		unsigned char *q = mpk_heap_realloc(h, p, steps[i]);
		REQUIRE(q);
		if (!t_intact(q, keep, 99))
			t_fail("realloc %zu -> %zu lost bytes", have, steps[i]);
		CHECK(mpk_heap_usable_size(h, q) >= steps[i]);
		t_fill(q, steps[i], 99);
		p = q;
		have = steps[i];
	}
	CHECK(mpk_heap_free(h, p) == 0);
}

static void misuse(mpk_heap *h)
{
	const size_t sz[] = { 3700, 4400, 9000, 20000, 32768 - HDRB };
	struct mpk_heap_stats st;

	t_misuse_catch();
	for (size_t i = 0; i < sizeof(sz) / sizeof(*sz); i++) {
		/* Freed twice: from the thread's cache, and after it gave the
		 * block back to its slab. */
		for (int flush = 0; flush < 2; flush++) {
			unsigned char *p = mpk_heap_malloc(h, sz[i]);
			REQUIRE(p && mpk_heap_free(h, p) == 0);
			if (flush)
				REQUIRE(mpk_heap_stats_get(h, &st) == 0);
			CHECK_ERR(mpk_heap_free(h, p), EINVAL);
			CHECK_MISUSE(MPK_MISUSE_DOUBLE_FREE, p);
		}
		/* Inside a live block. */
		unsigned char *p = mpk_heap_malloc(h, sz[i]);
		REQUIRE(p);
		CHECK_ERR(mpk_heap_free(h, p + 64), EINVAL);
		CHECK_MISUSE(MPK_MISUSE_WILD, p + 64);
		CHECK(mpk_heap_free(h, p) == 0);
	}
	/* Neighbours of one class: an overflow into the second's header. */
	enum { K = 8 };
	unsigned char *q[K], *a = NULL, *b = NULL;
	for (int i = 0; i < K; i++)
		REQUIRE(q[i] = mpk_heap_malloc(h, 4400));
	size_t cap = mpk_heap_usable_size(h, q[0]);
	for (int i = 0; i < K && !a; i++)
		for (int j = 0; j < K; j++)
			if (q[j] == q[i] + cap + HDRB) {
				a = q[i];
				b = q[j];
				break;
			}
	if (a) {
		t_overflow(a, 0x41, cap + 8);
		CHECK_ERR(mpk_heap_free(h, b), EINVAL);
		CHECK_MISUSE(MPK_MISUSE_CORRUPT, b);
	} else {
		t_fail("no two of %d blocks of 4400 B are neighbours", K);
	}
	for (int i = 0; i < K; i++)
		if (q[i] != b)
			CHECK(mpk_heap_free(h, q[i]) == 0);
	CHECK(t_misuses == 0);
}

int main(void)
{
	t_backend();
	mpk_domain *d = mpk_domain_create("heap-classes", MPK_RW, 0);
	REQUIRE(d);
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h);
	packed(h);
	sizes(h);
	aligned(h);
	reallocs(h);
	misuse(h);
	/* A vault's secrets use the same classes (without headers). */
	unsigned char *s1 = mpk_secret_alloc(d, 4400), *s2 = mpk_secret_alloc(d, 20000);
	REQUIRE(s1 && s2);
	t_fill(s1, 4400, 5);
	t_fill(s2, 20000, 6);
	CHECK(t_intact(s1, 4400, 5) && t_intact(s2, 20000, 6));
	CHECK(mpk_secret_free(s1) == 0 && mpk_secret_free(s2) == 0);
	CHECK(mpk_heap_destroy(h) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
