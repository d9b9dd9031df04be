/*
 * Freeing a block to the wrong heap is caught: the report names both heaps
 * and both domains (and a secret given to a heap names its vault), the
 * block stays allocated in its own heap, and freeing it there works.  By
 * default the process aborts with the report.
 */
#include "t_heap.h"

static mpk_heap *a, *b;
static void *pa;

static void wrong(void *arg)
{
	(void)arg;
	mpk_heap_free(b, pa);
	_exit(0);
}

int main(void)
{
	static char report[16384];
	struct mpk_heap_stats sa, sb;
	char want[160];

	t_backend();
	t_need_memlock(1 << 20);
	mpk_domain *da = mpk_domain_create("heap-a", MPK_RW, 0);
	mpk_domain *db = mpk_domain_create("heap-b", MPK_RW, 0);
	mpk_domain *dv = mpk_domain_create("vault-v", MPK_RW, 0);
	REQUIRE(da && db && dv);
	a = mpk_heap_create(da, 0);
	b = mpk_heap_create(db, 0);
	mpk_heap *ga = mpk_heap_create(da, MPK_HEAP_GUARDED);
	REQUIRE(a && b && ga);

	pa = mpk_heap_malloc(a, 40);
	REQUIRE(pa);
	t_fill(pa, 40, 2);
	int st = t_child_stderr(wrong, NULL, report, sizeof(report));
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	snprintf(want, sizeof(want), "foreign pointer %p in mpk_heap_free (heap %p, domain \"heap-b\")",
		 pa, (void *)b);
	CHECK_HAS(report, want);
	snprintf(want, sizeof(want), "it belongs to heap %p (domain \"heap-a\")", (void *)a);
	CHECK_HAS(report, want);

	t_misuse_catch();
	const size_t sizes[] = { 40, 3000, 100000, 800000 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
		for (int k = 0; k < 2; k++) {
			mpk_heap *own = k ? ga : a;
			void *p = mpk_heap_malloc(own, sizes[i]);
			REQUIRE(p);
			t_fill(p, sizes[i], 6);
			REQUIRE(mpk_heap_stats_get(own, &sa) == 0 && mpk_heap_stats_get(b, &sb) == 0);
			CHECK_ERR(mpk_heap_free(b, p), EINVAL);
			CHECK_MISUSE(MPK_MISUSE_FOREIGN, p);
			CHECK(t_misuse.heap == b && t_misuse.domain == db);
			CHECK(t_misuse.owner == own && t_misuse.owner_domain == da);
			CHECK(t_misuse.owner_domain_name && !strcmp(t_misuse.owner_domain_name, "heap-a"));
			CHECK_ERR(mpk_heap_realloc(b, p, 8), EINVAL);
			CHECK_MISUSE(MPK_MISUSE_FOREIGN, p);
			struct mpk_heap_stats ta, tb;
			REQUIRE(mpk_heap_stats_get(own, &ta) == 0 && mpk_heap_stats_get(b, &tb) == 0);
			CHECK(ta.blocks == sa.blocks && tb.blocks == sb.blocks);
			CHECK(t_intact(p, sizes[i], 6));
			CHECK(mpk_heap_free(own, p) == 0);
		}
	}

	/* A secret is not a heap block. */
	void *s = mpk_secret_alloc(dv, 32);
	REQUIRE(s);
	CHECK_ERR(mpk_heap_free(a, s), EINVAL);
	CHECK_MISUSE(MPK_MISUSE_FOREIGN, s);
	CHECK(t_misuse.owner == NULL && t_misuse.owner_domain == dv);
	CHECK(mpk_secret_free(s) == 0);

	CHECK(mpk_heap_free(a, pa) == 0);
	CHECK(t_misuses == 0);
	CHECK(mpk_heap_destroy(a) == 0 && mpk_heap_destroy(b) == 0 && mpk_heap_destroy(ga) == 0);
	CHECK(mpk_domain_destroy(da) == 0 && mpk_domain_destroy(db) == 0);
	CHECK(mpk_domain_destroy(dv) == 0);
	return t_done();
}
