/*
 * A heap is a working allocator: malloc, calloc, realloc, aligned_alloc,
 * usable_size and free across small, large and region-sized blocks; every
 * block lies in the heap's domain, is 16-byte aligned, holds what was
 * written to it while others come and go, and the heap's counters follow.
 */
#include <stdint.h>

#include "t_state.h"

static const size_t sizes[] = {
	0, 1, 15, 16, 17, 100, 1000, 3568, 3569, 4000, 10000, 100000,
	500000, 600000, 3 << 20,
};
enum { N = sizeof(sizes) / sizeof(*sizes) };

static int zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

int main(void)
{
	unsigned char *p[N];
	struct mpk_heap_stats st;

	t_backend();
	mpk_domain *d = mpk_domain_create("heap-basic", MPK_RW, 0);
	REQUIRE(d);
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h);
	CHECK(mpk_heap_domain(h) == d);

	for (int i = 0; i < N; i++) {
		p[i] = mpk_heap_malloc(h, sizes[i]);
		REQUIRE(p[i]);
		CHECK(((uintptr_t)p[i] & 15) == 0);
		CHECK(mpk_heap_usable_size(h, p[i]) >= (sizes[i] ? sizes[i] : 1));
		CHECK(mpk_domain_of(p[i]) == d);
		CHECK(mpk_domain_of(p[i] + (sizes[i] ? sizes[i] - 1 : 0)) == d);
		t_fill(p[i], sizes[i], (unsigned)i);
	}
	REQUIRE(mpk_heap_stats_get(h, &st) == 0);
	CHECK(st.blocks == N);
	CHECK(st.mapped >= (3u << 20) + 600000);
	for (int i = 0; i < N; i++) {
		CHECK(t_intact(p[i], sizes[i], (unsigned)i));
		for (int j = 0; j < i; j++) /* disjoint */
			CHECK(p[i] + sizes[i] <= p[j] || p[j] + sizes[j] <= p[i] ||
			      !sizes[i] || !sizes[j]);
	}

	/* Free every other one, allocate again, and the rest are intact. */
	for (int i = 0; i < N; i += 2)
		CHECK(mpk_heap_free(h, p[i]) == 0);
	for (int i = 0; i < N; i += 2) {
		/* calloc hands out zeros, also where freed data was */
		p[i] = mpk_heap_calloc(h, 1, sizes[i]);
		REQUIRE(p[i]);
		CHECK(zero(p[i], sizes[i]));
		t_fill(p[i], sizes[i], (unsigned)i + 100);
	}
	for (int i = 0; i < N; i++)
		CHECK(t_intact(p[i], sizes[i], (unsigned)i + (i % 2 ? 0 : 100)));

	/* realloc keeps the contents, growing through every kind of block
	 * and shrinking back. */
	unsigned char *r = mpk_heap_malloc(h, 10);
	REQUIRE(r);
	t_fill(r, 10, 7);
	size_t have = 10;
	const size_t steps[] = { 20, 300, 5000, 70000, 800000, 2 << 20, 4000, 64, 1 };
	for (size_t k = 0; k < sizeof(steps) / sizeof(*steps); k++) {
		unsigned char *q = mpk_heap_realloc(h, r, steps[k]);
		REQUIRE(q);
		size_t keep = have < steps[k] ? have : steps[k];
		CHECK(t_intact(q, keep, 7));
		CHECK(mpk_heap_usable_size(h, q) >= steps[k]);
		t_fill(q, steps[k], 7);
		r = q;
		have = steps[k];
	}
	CHECK(mpk_heap_free(h, r) == 0);
	unsigned char *z = mpk_heap_realloc(h, NULL, 33); /* malloc */
	REQUIRE(z);
	unsigned char *z0 = mpk_heap_realloc(h, z, 0); /* a block, not a free */
	REQUIRE(z0);
	CHECK(mpk_heap_usable_size(h, z0) >= 1);
	CHECK(mpk_heap_free(h, z0) == 0);

	/* aligned_alloc: every power of two up to 2 MiB, small and large. */
	for (size_t a = 1; a <= (2u << 20); a *= 2) {
		const size_t n[] = { 1, 3000, 70000 };
		for (int k = 0; k < 3; k++) {
			unsigned char *q = mpk_heap_aligned_alloc(h, a, n[k]);
			REQUIRE(q);
			if ((uintptr_t)q & (a - 1))
				t_fail("aligned_alloc(%zu, %zu) = %p", a, n[k], (void *)q);
			CHECK(mpk_heap_usable_size(h, q) >= n[k]);
			t_fill(q, n[k], 9);
			CHECK(t_intact(q, n[k], 9));
			CHECK(mpk_heap_free(h, q) == 0);
		}
	}

	CHECK(mpk_heap_free(h, NULL) == 0);
	for (int i = 0; i < N; i++)
		CHECK(mpk_heap_free(h, p[i]) == 0);
	REQUIRE(mpk_heap_stats_get(h, &st) == 0);
	CHECK(st.blocks == 0 && st.bytes == 0);
	CHECK(mpk_heap_destroy(h) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
