/*
 * Heap blocks follow the rights to the heap's domain (closed: reads and
 * writes fault; read-only: writes fault), and every heap call works
 * whatever rights the calling thread holds, ordinary and guarded heaps
 * alike, and leaves them exactly as they were.
 */
#include "t_heap.h"

#define SAME(d, r)                                                             \
	do {                                                                   \
		if (mpk_get(d) != (r))                                         \
			t_fail("rights changed: %d, want %d", mpk_get(d), (r)); \
	} while (0)

static int zeros(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

static void calls(mpk_domain *d, mpk_heap *h, int r)
{
	struct mpk_heap_stats st;

	REQUIRE(mpk_set(d, r) == 0);
	unsigned char *p = mpk_heap_malloc(h, 100);
	CHECK(p != NULL);
	SAME(d, r);
	unsigned char *q = mpk_heap_calloc(h, 10, 300);
	CHECK(q != NULL);
	SAME(d, r);
	unsigned char *a = mpk_heap_aligned_alloc(h, 256, 700000);
	CHECK(a != NULL && ((uintptr_t)a & 255) == 0);
	SAME(d, r);
	p = mpk_heap_realloc(h, p, 5000);
	CHECK(p != NULL);
	SAME(d, r);
	CHECK(mpk_heap_usable_size(h, p) >= 5000);
	SAME(d, r);
	CHECK(mpk_heap_stats_get(h, &st) == 0 && st.blocks == 3);
	SAME(d, r);
	CHECK(mpk_heap_domain(h) == d);
	SAME(d, r);

	/* The blocks are as open as the domain, no more. */
	CHECK_RIGHTS(d, p, r);
	CHECK_RIGHTS(d, q + 2999, r);
	CHECK_RIGHTS(d, a + 699999, r);
	MPK_WITH(d, MPK_READ) {
		CHECK(zeros(q, 3000));
	}
	SAME(d, r);

	CHECK(mpk_heap_free(h, p) == 0);
	SAME(d, r);
	CHECK(mpk_heap_free(h, q) == 0);
	CHECK(mpk_heap_free(h, a) == 0);
	SAME(d, r);
	CHECK(mpk_heap_stats_get(h, &st) == 0 && st.blocks == 0);
}

int main(void)
{
	const int rights[] = { MPK_NONE, MPK_READ, MPK_RW, MPK_NONE };

	t_backend();
	mpk_domain *d = mpk_domain_create("heap-rights", MPK_RW, 0);
	REQUIRE(d);
	mpk_heap *h = mpk_heap_create(d, 0);
	mpk_heap *g = mpk_heap_create(d, MPK_HEAP_GUARDED);
	REQUIRE(h && g);
	for (size_t i = 0; i < sizeof(rights) / sizeof(*rights); i++) {
		calls(d, h, rights[i]);
		calls(d, g, rights[i]);
	}
	CHECK(mpk_heap_destroy(h) == 0);
	CHECK(mpk_heap_destroy(g) == 0);
	SAME(d, MPK_NONE);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
