/*
 * Every heap call rejects bad input with the documented error and changes
 * nothing: a bad domain or flags for mpk_heap_create() (EINVAL), a handle
 * that is no heap (EINVAL: NULL, a stack address, domain memory, a heap
 * block), a bad alignment (EINVAL), no place for stats or a NULL block
 * (EINVAL), sizes that overflow (ENOMEM), a bad MPKIT_HEAP_META (EINVAL).
 */
#include "t_heap.h"

static void bad_env(void)
{
	setenv("MPKIT_HEAP_META", "sometimes", 1);
	mpk_domain *d = mpk_domain_create("heap-env", MPK_RW, 0);
	REQUIRE(d);
	int domains = t_domains(), keys = t_keys_in_use();
	CHECK_ERR(mpk_heap_create(d, 0), EINVAL);
	CHECK_ERR(mpk_secret_alloc(d, 32), EINVAL);
	CHECK(t_domains() == domains && t_keys_in_use() == keys);
	CHECK(mpk_domain_destroy(d) == 0); /* not held */
}

int main(void)
{
	struct mpk_heap_stats a, b;
	int local;

	t_backend();
	t_in_child(bad_env, "MPKIT_HEAP_META=sometimes");

	mpk_domain *d = mpk_domain_create("heap-bad", MPK_RW, 0);
	mpk_domain *gone = mpk_domain_create("heap-gone", MPK_RW, 0);
	REQUIRE(d && gone);
	REQUIRE(mpk_domain_destroy(gone) == 0);
	int domains = t_domains(), keys = t_keys_in_use();

	/* mpk_heap_create */
	CHECK_ERR(mpk_heap_create(NULL, 0), EINVAL);
	CHECK_ERR(mpk_heap_create(gone, 0), EINVAL);
	CHECK_ERR(mpk_heap_create(d, MPK_HEAP_WIPE << 1), EINVAL);
	CHECK_ERR(mpk_heap_create(d, 1u << 16), EINVAL);
	CHECK_ERR(mpk_heap_create(d, MPK_HEAP_GUARDED | MPK_HEAP_GUARDED_BELOW), EINVAL);
	CHECK(t_domains() == domains && t_keys_in_use() == keys);
	CHECK(mpk_domain_destroy(d) == 0); /* no failed create holds it */
	REQUIRE(d = mpk_domain_create("heap-bad", MPK_RW, 0));

	/* handles that are no heap: before any heap exists, and after */
	t_heap_refused(NULL);
	t_heap_refused((mpk_heap *)&local);
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h);
	void *p = mpk_heap_malloc(h, 100);
	void *mem = mpk_alloc(d, 4096);
	REQUIRE(p && mem);
	t_fill(p, 100, 5);
	REQUIRE(mpk_heap_stats_get(h, &a) == 0);
	unsigned long long mp = t_mprotects();
	t_heap_refused(NULL);
	t_heap_refused((mpk_heap *)&local);
	t_heap_refused((mpk_heap *)mem);
	t_heap_refused((mpk_heap *)p);
	t_heap_refused((mpk_heap *)((char *)h + 64));

	/* bad arguments to a good heap */
	const size_t aligns[] = { 0, 3, 48, 4 << 20, SIZE_MAX };
	for (size_t i = 0; i < sizeof(aligns) / sizeof(*aligns); i++)
		CHECK_ERR_CASE(mpk_heap_aligned_alloc(h, aligns[i], 8), EINVAL, "align %zu", aligns[i]);
	CHECK_ERR(mpk_heap_usable_size(h, NULL), EINVAL);
	CHECK_ERR(mpk_heap_stats_get(h, NULL), EINVAL);
	CHECK_ERR(mpk_heap_calloc(h, SIZE_MAX, 2), ENOMEM);
	CHECK_ERR(mpk_heap_realloc(h, p, SIZE_MAX), ENOMEM);
	CHECK(t_mprotects() == mp); /* rejected before opening anything */
	CHECK(mpk_heap_free(h, NULL) == 0);

	REQUIRE(mpk_heap_stats_get(h, &b) == 0);
	CHECK(a.blocks == b.blocks && a.bytes == b.bytes && a.mapped == b.mapped);
	CHECK(t_intact(p, 100, 5));
	CHECK(mpk_heap_usable_size(h, p) >= 100);
	CHECK(mpk_heap_free(h, p) == 0);
	CHECK(mpk_heap_destroy(h) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
