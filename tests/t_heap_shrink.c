/*
 * Memory goes back to the kernel as a heap shrinks: after tens of MiB of
 * small blocks, page runs and own-region blocks are touched and freed, at
 * most the one chunk the heap keeps is still resident (mincore) or mapped,
 * and it still allocates.  Free runs decay: resident for a while (250 ms),
 * purged by the next free of a run into its arena after that (one too
 * long for the thread caches, which keep a few shorter ones).  (mincore, not the process's RSS: sanitizers keep
 * shadow memory resident.)
 */
#include "t_heap.h"

#define MiB (1u << 20)

static int cmp(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

int main(void)
{
	enum { SMALL = 100000, RUNS = 1500, BIGS = 8 };
	static void *s[SMALL], *r[RUNS], *b[BIGS];
	static uintptr_t pg[SMALL];
	struct mpk_heap_stats st;

	t_backend();
	mpk_domain *d = mpk_domain_create("heap-shrink", MPK_RW, 0);
	REQUIRE(d);
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h);
	void *warm = mpk_heap_malloc(h, 64); /* metadata and a first chunk */
	REQUIRE(warm);

	for (int i = 0; i < SMALL; i++) {
		REQUIRE(s[i] = mpk_heap_malloc(h, 64 + i % 128));
		memset(s[i], 1, 64);
	}
	for (int i = 0; i < RUNS; i++) {
		REQUIRE(r[i] = mpk_heap_malloc(h, 16000));
		memset(r[i], 2, 16000);
	}
	for (int i = 0; i < BIGS; i++) {
		REQUIRE(b[i] = mpk_heap_malloc(h, MiB));
		memset(b[i], 3, MiB);
	}
	size_t page = t_page(), pages = 0;
	for (int i = 0; i < SMALL; i++)
		pages += t_resident(s[i], 64);
	for (int i = 0; i < RUNS; i++)
		pages += t_resident(r[i], 16000);
	for (int i = 0; i < BIGS; i++)
		pages += t_resident(b[i], MiB);
	CHECK(pages * page > 40 * MiB);
	REQUIRE(mpk_heap_stats_get(h, &st) == 0);
	CHECK(st.mapped > 40 * MiB);

	/* Shrink with every chunk still in use: free runs go back too. */
	for (int i = 0; i < RUNS; i++)
		if (i % 32)
			CHECK(mpk_heap_free(h, r[i]) == 0);
	/* Not yet purged (below the cap, too young): pages for the next. */
	size_t freed = 0;
	for (int i = 0; i < RUNS; i++)
		if (i % 32)
			freed += t_resident(r[i], 16000);
	CHECK(freed * page > 2 * MiB);
	usleep(600 * 1000);
	void *late = mpk_heap_malloc(h, 100000);
	CHECK(late && mpk_heap_free(h, late) == 0);
	freed = 0;
	for (int i = 0; i < RUNS; i++)
		if (i % 32)
			freed += t_resident(r[i], 16000);
	if (freed * page > 2 * MiB)
		t_fail("%zu KiB of freed runs still resident", freed * page >> 10);

	/* Then all of it, in an order that leaves holes until the end. */
	for (int i = 0; i < SMALL; i += 2)
		CHECK(mpk_heap_free(h, s[i]) == 0);
	for (int i = 0; i < RUNS; i += 32)
		CHECK(mpk_heap_free(h, r[i]) == 0);
	for (int i = 1; i < SMALL; i += 2)
		CHECK(mpk_heap_free(h, s[i]) == 0);
	for (int i = 0; i < BIGS; i++)
		CHECK(mpk_heap_free(h, b[i]) == 0);

	REQUIRE(mpk_heap_stats_get(h, &st) == 0);
	CHECK(st.blocks == 1);
	CHECK(st.mapped <= 2 * MiB);
	/* Count each page once: small blocks share them. */
	size_t left = 0;
	for (int i = 0; i < SMALL; i++)
		pg[i] = (uintptr_t)s[i] & ~(page - 1);
	qsort(pg, SMALL, sizeof(*pg), cmp);
	for (int i = 0; i < SMALL; i++)
		if (i == 0 || pg[i] != pg[i - 1])
			left += t_resident((void *)pg[i], 1);
	for (int i = 0; i < RUNS; i++)
		left += t_resident(r[i], 16000);
	for (int i = 0; i < BIGS; i++)
		left += t_resident(b[i], MiB);
	if (left * page > 2 * MiB)
		t_fail("%zu KiB still resident of %zu KiB", left * page >> 10, pages * page >> 10);

	void *again = mpk_heap_malloc(h, 20000);
	CHECK(again != NULL);
	CHECK(mpk_heap_free(h, again) == 0 && mpk_heap_free(h, warm) == 0);
	CHECK(mpk_heap_destroy(h) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
