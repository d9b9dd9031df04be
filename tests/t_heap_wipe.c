/*
 * MPK_HEAP_WIPE: a freed block's bytes read back as zero through the
 * pointer still held, whichever way the free goes: into the thread's
 * cache (small blocks, page runs up to 20 pages), through the arena (a
 * full cache, a run too long to cache) or into the regions kept for big
 * blocks.  Without the flag (the default) the same bytes stay as the
 * program left them, which is what the flag is for.  A guarded heap takes
 * the flag too.  Both backends.
 */
#include "t_attack.h"

enum { PAT = 0x5c, MANY = 200 };

static const size_t sizes[] = { 24, 100, 5000, 40 << 10, 120 << 10, 200 << 10 };

/* Bytes of p still as written (read where sanitizers do not look). */
static size_t kept(const unsigned char *p, size_t n)
{
	static unsigned char buf[256 << 10];
	size_t k = 0;

	REQUIRE(n <= sizeof(buf));
	t_attack_copy(buf, p, n);
	for (size_t i = 0; i < n; i++)
		k += buf[i] == PAT;
	return k;
}

static void one_heap(mpk_domain *d, unsigned flags)
{
	static unsigned char *many[MANY];
	mpk_heap *h = mpk_heap_create(d, flags);
	bool wipe = flags & MPK_HEAP_WIPE;

	REQUIRE(h);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
		unsigned char *p = mpk_heap_malloc(h, sizes[i]);
		REQUIRE(p);
		size_t n = mpk_heap_usable_size(h, p);
		memset(p, PAT, n);
		CHECK(mpk_heap_free(h, p) == 0);
		size_t k = kept(p, n);
		if (wipe ? k != 0 : k == 0)
			t_fail("flags 0x%x, %zu bytes: %zu of %zu bytes still as written after free", flags,
			       sizes[i], k, n);
	}
	/* Past a full cache: the slow way, through the arena. */
	for (int i = 0; i < MANY; i++) {
		REQUIRE(many[i] = mpk_heap_malloc(h, 48));
		memset(many[i], PAT, 48);
	}
	size_t k = 0;
	for (int i = 0; i < MANY; i++)
		CHECK(mpk_heap_free(h, many[i]) == 0);
	for (int i = 0; i < MANY; i++)
		k += kept(many[i], 48);
	if (wipe ? k != 0 : k == 0)
		t_fail("flags 0x%x, %d blocks of 48 bytes: %zu bytes still as written after free", flags, MANY, k);
	CHECK(mpk_heap_destroy(h) == 0);
}

static void scenario(void)
{
	mpk_domain *d = mpk_domain_create("wipe", MPK_RW, 0);

	REQUIRE(d);
	t_misuse_catch();
	one_heap(d, 0);
	one_heap(d, MPK_HEAP_WIPE);
	/* Guarded blocks' pages go back to the kernel: the flag is taken. */
	mpk_heap *g = mpk_heap_create(d, MPK_HEAP_GUARDED | MPK_HEAP_WIPE);
	REQUIRE(g);
	void *p = mpk_heap_malloc(g, 100);
	CHECK(p && mpk_heap_free(g, p) == 0);
	CHECK(mpk_heap_destroy(g) == 0);
	/* Flags beyond the known ones are still refused. */
	errno = 0;
	CHECK(mpk_heap_create(d, MPK_HEAP_WIPE << 1) == NULL && errno == EINVAL);
	errno = 0;
	CHECK(mpk_heap_create(d, MPK_HEAP_GUARDED | MPK_HEAP_GUARDED_BELOW | MPK_HEAP_WIPE) == NULL &&
	      errno == EINVAL);
	CHECK(t_misuses == 0);
	CHECK(mpk_domain_destroy(d) == 0);
}

int main(void)
{
	return t_both_backends(scenario);
}
