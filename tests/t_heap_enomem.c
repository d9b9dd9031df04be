/*
 * Out of memory, a heap loses nothing: with domain memory limited (a test
 * cap on what mpkit maps in its windows: RLIMIT_AS counts a reservation
 * whole and never what is mapped inside it) allocation of every kind of block ends in NULL
 * and ENOMEM; the failing call maps nothing; every block allocated before
 * is intact and still protected by its domain; freeing some lets
 * allocation succeed again.  Sizes no memory can hold fail the same way,
 * without any limit, and change nothing.
 */
#include "t_heap.h"
#include "../src/core/testing.h" /* the most bytes mpkit may map in its windows */

#define MiB (1u << 20)
#define MAXB 200000

static void *blk[MAXB];
static size_t len[MAXB];

static void absurd(mpk_heap *h)
{
	struct mpk_heap_stats a, b;
	size_t vs = t_vsize();

	REQUIRE(mpk_heap_stats_get(h, &a) == 0);
	CHECK_ERR(mpk_heap_malloc(h, SIZE_MAX), ENOMEM);
	CHECK_ERR(mpk_heap_malloc(h, (size_t)PTRDIFF_MAX + 1), ENOMEM);
	CHECK_ERR(mpk_heap_malloc(h, (size_t)1 << 46), ENOMEM);
	CHECK_ERR(mpk_heap_calloc(h, SIZE_MAX / 2, 3), ENOMEM);
	CHECK_ERR(mpk_heap_calloc(h, (size_t)1 << 23, (size_t)1 << 23), ENOMEM);
	CHECK_ERR(mpk_heap_aligned_alloc(h, 4096, (size_t)1 << 46), ENOMEM);
	REQUIRE(mpk_heap_stats_get(h, &b) == 0);
	CHECK(a.blocks == b.blocks && a.mapped == b.mapped);
	CHECK(t_vsize() == vs);
}

/* Allocate blocks of size n until it fails; returns how many there are now. */
static int fill(mpk_heap *h, int n0, size_t size)
{
	int n = n0;

	while (n < MAXB) {
		size_t vs = t_vsize();
		void *p = mpk_heap_malloc(h, size);
		if (!p) {
			CHECK(errno == ENOMEM);
			/* nothing mapped by the failed call */
			CHECK(t_vsize() <= vs);
			break;
		}
		blk[n] = p;
		len[n] = size;
		t_cookie_put(p, size);
		n++;
	}
	CHECK(n < MAXB);
	return n;
}

static void limited(void)
{
	mpk_domain *d = mpk_domain_create("heap-enomem", MPK_RW, 0);
	REQUIRE(d);
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h);
	void *warm = mpk_heap_malloc(h, 64);
	REQUIRE(warm);
	absurd(h);

	mpk__window_test_cap(mpk__window_mapped() + 24 * MiB);
	int n = fill(h, 0, 700000);       /* own regions */
	int nb = n;
	n = fill(h, n, 50000);            /* page runs */
	n = fill(h, n, 100);              /* small blocks */
	CHECK(nb > 0 && n > nb);

	mpk__window_test_cap(0);
	for (int i = 0; i < n; i++)
		if (!t_cookie_ok(blk[i], len[i])) {
			t_fail("block %d (%zu bytes) damaged", i, len[i]);
			break;
		}
	struct mpk_heap_stats st;
	REQUIRE(mpk_heap_stats_get(h, &st) == 0);
	CHECK(st.blocks == (size_t)n + 1);

	/* Still protected: closed, the blocks fault. */
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	CHECK_FAULT(t_read_in_child(blk[0]), d, blk[0]);
	CHECK_FAULT(t_write_in_child(blk[n - 1]), d, blk[n - 1]);
	REQUIRE(mpk_set(d, MPK_RW) == 0);

	/* Freeing the regions makes room again, within the limit. */
	mpk__window_test_cap(mpk__window_mapped() + MiB / 2);
	CHECK_ERR(mpk_heap_malloc(h, 700000), ENOMEM);
	for (int i = 0; i < nb; i++)
		CHECK(mpk_heap_free(h, blk[i]) == 0);
	void *p = mpk_heap_malloc(h, 700000);
	CHECK(p != NULL);
	mpk__window_test_cap(0);
	for (int i = nb; i < n; i++)
		CHECK(t_cookie_ok(blk[i], len[i]) && mpk_heap_free(h, blk[i]) == 0);
	CHECK(mpk_heap_free(h, p) == 0 && mpk_heap_free(h, warm) == 0);
	CHECK(mpk_heap_destroy(h) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
}

int main(void)
{
	t_backend();
	t_in_child(limited, "limited child");
	return t_done();
}
