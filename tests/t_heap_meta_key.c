/*
 * hw: all heaps and vaults share one hardware key for their metadata,
 * taken with the first heap and given back with the last; with
 * MPKIT_HEAP_META=open they take none.
 */
#include "t_heap.h"

static void shared(int open)
{
	int k0 = t_keys_in_use();
	mpk_domain *d[3];
	mpk_heap *h[6];

	for (int i = 0; i < 3; i++)
		REQUIRE(d[i] = mpk_domain_create("heap-key", MPK_RW, 0));
	CHECK(t_keys_in_use() == k0 + 3);
	for (int i = 0; i < 6; i++) {
		h[i] = mpk_heap_create(d[i % 3], i >= 3 ? MPK_HEAP_GUARDED : 0);
		REQUIRE(h[i]);
		void *p = mpk_heap_malloc(h[i], 64);
		CHECK(p != NULL);
		CHECK(t_keys_in_use() == k0 + 3 + !open);
	}
	void *s = mpk_secret_alloc(d[0], 32);
	REQUIRE(s);
	CHECK(t_keys_in_use() == k0 + 3 + !open);
	for (int i = 0; i < 6; i++) {
		CHECK(mpk_heap_destroy(h[i]) == 0);
		CHECK(t_keys_in_use() == k0 + 3 + !open); /* the vault still needs it */
	}
	CHECK(mpk_secret_free(s) == 0);
	CHECK(mpk_domain_destroy(d[0]) == 0); /* and its vault: the last */
	CHECK(t_keys_in_use() == k0 + 2);
	CHECK(mpk_domain_destroy(d[1]) == 0 && mpk_domain_destroy(d[2]) == 0);
	CHECK(t_keys_in_use() == k0);

	/* Again from nothing: the arena comes back. */
	REQUIRE(d[0] = mpk_domain_create("heap-key-again", MPK_RW, 0));
	REQUIRE(h[0] = mpk_heap_create(d[0], 0));
	CHECK(t_keys_in_use() == k0 + 1 + !open);
	void *p = mpk_heap_malloc(h[0], 5000);
	CHECK(p && mpk_heap_free(h[0], p) == 0);
	CHECK(mpk_heap_destroy(h[0]) == 0);
	CHECK(t_keys_in_use() == k0 + 1);
	CHECK(mpk_domain_destroy(d[0]) == 0);
}

static void shared_open(void)
{
	setenv("MPKIT_HEAP_META", "open", 1);
	shared(1);
}

int main(void)
{
	t_need_hw();
	t_need_memlock(1 << 20);
	t_in_child(shared_open, "MPKIT_HEAP_META=open");
	shared(0);
	return t_done();
}
