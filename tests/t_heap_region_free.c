/*
 * A heap's and a vault's own regions (a chunk of small blocks, a big
 * block's region, a guarded block's region, a vault chunk) are domain
 * memory, visible in /proc/self/maps, but not the
 * caller's: mpk_free() of one fails with EINVAL and unmaps nothing.  The
 * blocks in them stay usable and the heap, the vault and the domains still
 * go cleanly.  Both backends.
 */
#include "t_heap.h"

/* mpk_free() of the start of the mapping holding p is refused. */
static void check_refused(mpk_domain *d, void *p, const char *what)
{
	struct t_map m;

	if (!t_map_of(p, &m)) {
		t_fail("%s: %p is not mapped", what, p);
		return;
	}
	errno = 0;
	int rc = mpk_free(d, (void *)m.lo);
	if (rc != -1 || errno != EINVAL)
		t_fail("%s: mpk_free(region %lx) gave %d errno %d, want EINVAL", what, m.lo, rc, errno);
	if (!t_map_of(p, &m))
		t_fail("%s: %p was unmapped", what, p);
}

static void scenario(void)
{
	mpk_domain *d = mpk_domain_create("heap-regions", MPK_RW, 0);
	mpk_domain *v = mpk_domain_create("vault-regions", MPK_RW, 0);
	REQUIRE(d && v);
	mpk_heap *h = mpk_heap_create(d, 0);
	mpk_heap *g = mpk_heap_create(d, MPK_HEAP_GUARDED);
	REQUIRE(h && g);

	unsigned char *small = mpk_heap_malloc(h, 48);
	unsigned char *big = mpk_heap_malloc(h, 1 << 20); /* a region of its own */
	unsigned char *guarded = mpk_heap_malloc(g, 100);
	unsigned char *secret = mpk_secret_alloc(v, 32);
	REQUIRE(small && big && guarded && secret);
	t_fill(small, 48, 1);
	t_fill(big, 1 << 20, 2);
	t_fill(guarded, 100, 3);
	t_fill(secret, 32, 4);

	check_refused(d, small, "small-block chunk");
	check_refused(d, big, "big block");
	check_refused(d, guarded, "guarded block");
	check_refused(v, secret, "vault chunk");

	CHECK(t_intact(small, 48, 1));
	CHECK(t_intact(big, 1 << 20, 2));
	CHECK(t_intact(guarded, 100, 3));
	CHECK(t_intact(secret, 32, 4));

	/* A plain mpk_alloc() region of the same domain still frees. */
	void *mine = mpk_alloc(d, 4096);
	REQUIRE(mine);
	CHECK(mpk_free(d, mine) == 0);

	CHECK(mpk_heap_free(h, small) == 0);
	CHECK(mpk_heap_free(h, big) == 0);
	CHECK(mpk_heap_free(g, guarded) == 0);
	CHECK(mpk_secret_free(secret) == 0);
	CHECK(mpk_heap_destroy(h) == 0);
	CHECK(mpk_heap_destroy(g) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	CHECK(mpk_domain_destroy(v) == 0);
}

int main(void)
{
	t_need_memlock(1 << 20);
	return t_both_backends(scenario);
}
