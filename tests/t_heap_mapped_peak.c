/* SPDX-License-Identifier: MIT */
/*
 * mpk_heap_stats_get()'s mapped_peak: the most `mapped` has been.  Eight
 * live blocks of 1 MiB (regions of their own) take it to at least 8 MiB;
 * freed, mapped falls and the peak stays; small blocks keep it at least
 * mapped; a new heap starts from its own.
 */
#include "t.h"

int main(void)
{
	struct mpk_heap_stats st;
	void *b[8];
	mpk_domain *d = mpk_domain_create("peak", MPK_RW, 0);
	REQUIRE(d);
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h);
	REQUIRE(mpk_heap_stats_get(h, &st) == 0);
	CHECK(st.mapped_peak == st.mapped);
	for (int i = 0; i < 8; i++)
		REQUIRE(b[i] = mpk_heap_malloc(h, 1 << 20));
	REQUIRE(mpk_heap_stats_get(h, &st) == 0);
	CHECK(st.mapped >= 8u << 20 && st.mapped_peak >= st.mapped);
	size_t peak = st.mapped_peak;
	for (int i = 0; i < 8; i++)
		REQUIRE(mpk_heap_free(h, b[i]) == 0);
	void *s = mpk_heap_malloc(h, 40);
	REQUIRE(s);
	REQUIRE(mpk_heap_stats_get(h, &st) == 0);
	CHECK(st.mapped < peak && st.mapped_peak == peak);
	CHECK(st.mpk__reserved[0] == 0 && st.mpk__reserved[1] == 0);

	mpk_heap *g = mpk_heap_create(d, 0);
	REQUIRE(g);
	REQUIRE(mpk_heap_stats_get(g, &st) == 0);
	CHECK(st.mapped_peak < peak);
	CHECK(mpk_heap_destroy(g) == 0);
	REQUIRE(mpk_heap_free(h, s) == 0);
	CHECK(mpk_heap_destroy(h) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
