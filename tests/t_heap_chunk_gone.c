/*
 * A thread's cache remembers the last chunk whose tag it checked, so that
 * a free into it skips the tag table; a chunk that goes back to the
 * kernel must end that.  Blocks filling several chunks are freed (the
 * emptied chunks but one go back, mapped no more), then each is freed a
 * second time, the most recently checked chunk's first: every second free
 * is named as misuse and fails with EINVAL.  Trusting the stale hint, the
 * heap would read the header of a block in memory that is gone.
 */
#include "t_heap.h"

#define N 1200
#define SIZE 3000 /* page runs of a few blocks: 3.6 MB, 4 chunks or more */

int main(void)
{
	static void *p[N];
	struct mpk_heap_stats st0, st1;

	t_backend();
	mpk_domain *d = mpk_domain_create("heap-chunk-gone", MPK_RW, 0);
	REQUIRE(d);
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h);
	for (int i = 0; i < N; i++)
		REQUIRE((p[i] = mpk_heap_malloc(h, SIZE)));
	REQUIRE(mpk_heap_stats_get(h, &st0) == 0);
	for (int i = 0; i < N; i++)
		REQUIRE(mpk_heap_free(h, p[i]) == 0);
	/* The cache's blocks go back too: the last chunks empty now. */
	REQUIRE(mpk_heap_stats_get(h, &st1) == 0);
	CHECK(st1.blocks == 0);
	if (st1.mapped + 2 * (1u << 20) > st0.mapped)
		t_fail("no chunk went back: %zu bytes mapped, %zu before", (size_t)st1.mapped,
		       (size_t)st0.mapped);

	t_misuse_catch();
	for (int i = N - 1; i >= 0; i--) {
		CHECK_ERR(mpk_heap_free(h, p[i]), EINVAL);
		if (t_misuses != 1 || (t_misuse.kind != MPK_MISUSE_WILD &&
				       t_misuse.kind != MPK_MISUSE_DOUBLE_FREE))
			t_fail("block %d: %d misuse(s), kind %d", i, t_misuses, t_misuse.kind);
		t_misuses = 0;
	}
	/* And the heap goes on. */
	void *q = mpk_heap_malloc(h, SIZE);
	CHECK(q != NULL);
	CHECK(mpk_heap_free(h, q) == 0);
	CHECK(mpk_heap_destroy(h) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
