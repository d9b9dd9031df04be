/*
 * With the metadata closed (MPKIT_HEAP_META=closed; the default on hw),
 * there is no thread cache (what decides where a block goes is all in the
 * sealed metadata): each malloc and each free opens the metadata once (2
 * WRPKRU on hw, 2 mprotect on soft), never more, counted by the heap
 * (meta_opens), in a loop of small mallocs and frees and in one keeping
 * 1000 blocks live; every block is intact.  With the metadata open there
 * is nothing to open.  The figures are printed.
 */
#include "t_heap.h"

enum { N = 20000, LIVE = 1000 };

static void *live[LIVE];

int main(void)
{
	static const size_t sizes[8] = { 16, 24, 32, 48, 64, 96, 128, 256 };
	struct mpk_heap_stats a, b;

	setenv("MPKIT_HEAP_META", "closed", 1);
	t_backend();
	mpk_domain *d = mpk_domain_create("meta-opens", MPK_RW, 0);
	REQUIRE(d);
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h);
	REQUIRE(mpk_set(d, MPK_RW) == 0);
	REQUIRE(mpk_heap_stats_get(h, &a) == 0);
	CHECK(a.meta_closed == 1);

	for (int i = 0; i < N; i++) {
		unsigned char *p = mpk_heap_malloc(h, sizes[i & 7]);
		REQUIRE(p);
		memset(p, i & 0xff, sizes[i & 7]);
		CHECK(p[sizes[i & 7] - 1] == (i & 0xff));
		REQUIRE(mpk_heap_free(h, p) == 0);
	}
	REQUIRE(mpk_heap_stats_get(h, &b) == 0);
	double one = (double)(b.meta_opens - a.meta_opens - 1) / N;
	printf("one at a time: %.4f metadata opens per malloc+free\n", one);
	CHECK(one >= 1.99 && one <= 2.0);

	unsigned x = 1;
	for (int i = 0; i < LIVE; i++) {
		REQUIRE(live[i] = mpk_heap_malloc(h, sizes[i & 7]));
		t_fill(live[i], 16, (unsigned)i);
	}
	REQUIRE(mpk_heap_stats_get(h, &a) == 0);
	for (int i = 0; i < N; i++) {
		x = x * 1103515245u + 12345u;
		unsigned k = (x >> 8) % LIVE;
		CHECK(t_intact(live[k], 16, k));
		REQUIRE(mpk_heap_free(h, live[k]) == 0);
		REQUIRE(live[k] = mpk_heap_malloc(h, sizes[(x >> 20) & 7]));
		t_fill(live[k], 16, k);
	}
	REQUIRE(mpk_heap_stats_get(h, &b) == 0);
	double many = (double)(b.meta_opens - a.meta_opens - 1) / N;
	printf("1000 live: %.4f metadata opens per malloc+free\n", many);
	CHECK(many >= 1.99 && many <= 2.0);
	for (int i = 0; i < LIVE; i++)
		CHECK(mpk_heap_free(h, live[i]) == 0);
	CHECK(mpk_heap_destroy(h) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
