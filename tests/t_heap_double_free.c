/*
 * A double free is caught, for every kind of block (small, page run, own
 * region, guarded): by default the report names the pointer, the heap and
 * its domain and the process aborts; with a handler that returns, the free
 * fails with EINVAL and the heap is as it was (its other blocks intact, its
 * counters unchanged, new blocks still come).
 */
#include "t_heap.h"

static mpk_heap *h;
static void *victim;

static void twice(void *arg)
{
	(void)arg;
	mpk_heap_free(h, victim); /* the second time: a report, then abort */
	_exit(0);
}

int main(void)
{
	const size_t sizes[] = { 24, 3000, 20000, 50000, 900000 };
	static char report[16384];
	struct mpk_heap_stats before, after;
	char want[128];

	t_backend();
	mpk_domain *d = mpk_domain_create("heap-df", MPK_RW, 0);
	REQUIRE(d);
	h = mpk_heap_create(d, 0);
	mpk_heap *g = mpk_heap_create(d, MPK_HEAP_GUARDED);
	REQUIRE(h && g);
	void *keep = mpk_heap_malloc(h, 24);
	REQUIRE(keep);
	t_fill(keep, 24, 8);

	/* The default: report and abort. */
	victim = mpk_heap_malloc(h, 24);
	REQUIRE(victim && mpk_heap_free(h, victim) == 0);
	int st = t_child_stderr(twice, NULL, report, sizeof(report));
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	snprintf(want, sizeof(want), "mpkit: heap misuse: double free of %p in mpk_heap_free", victim);
	CHECK_HAS(report, want);
	snprintf(want, sizeof(want), "(heap %p, domain \"heap-df\")", (void *)h);
	CHECK_HAS(report, want);
	CHECK_HAS(report, "backtrace:");

	/* A handler that returns: EINVAL, and nothing changed. */
	t_misuse_catch();
	for (int k = 0; k < 2; k++) {
		mpk_heap *hh = k ? g : h;
		for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
			void *p = mpk_heap_malloc(hh, sizes[i]);
			REQUIRE(p);
			REQUIRE(mpk_heap_free(hh, p) == 0);
			REQUIRE(mpk_heap_stats_get(hh, &before) == 0);
			CHECK_ERR(mpk_heap_free(hh, p), EINVAL);
			CHECK_MISUSE(MPK_MISUSE_DOUBLE_FREE, p);
			CHECK(t_misuse.heap == hh && t_misuse.domain == d);
			CHECK(!strcmp(t_misuse.call, "mpk_heap_free"));
			CHECK(!strcmp(t_misuse.domain_name, "heap-df"));
			/* usable_size and realloc of it are caught the same */
			CHECK(mpk_heap_usable_size(hh, p) == 0 && errno == EINVAL);
			CHECK_MISUSE(MPK_MISUSE_DOUBLE_FREE, p);
			CHECK_ERR(mpk_heap_realloc(hh, p, 10), EINVAL);
			CHECK_MISUSE(MPK_MISUSE_DOUBLE_FREE, p);
			REQUIRE(mpk_heap_stats_get(hh, &after) == 0);
			CHECK(after.blocks == before.blocks && after.bytes == before.bytes &&
			      after.mapped == before.mapped);
		}
	}
	CHECK(t_intact(keep, 24, 8));
	void *more = mpk_heap_malloc(h, 24);
	CHECK(more != NULL);
	CHECK(mpk_heap_free(h, more) == 0 && mpk_heap_free(h, keep) == 0);
	CHECK(t_misuses == 0);
	CHECK(mpk_heap_destroy(h) == 0 && mpk_heap_destroy(g) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
