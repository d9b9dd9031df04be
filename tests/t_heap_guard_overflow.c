/*
 * A guarded heap puts each block flush against a guard page: the first
 * byte past the block (its size rounded up to the 16-byte alignment) faults
 * at once, on read and on write, with SEGV_ACCERR at exactly that address,
 * and the guard belongs to no domain.  The page before the block is a
 * guard too.  The block itself is fully usable, also after realloc and
 * with a larger alignment.
 */
#include "t_heap.h"

static void check_block(mpk_heap *g, unsigned char *p, size_t n, size_t align)
{
	size_t page = t_page();
	unsigned char *end = p + ((n + align - 1) & ~(align - 1));
	unsigned char *first = (unsigned char *)((uintptr_t)p & ~(page - 1));

	CHECK(((uintptr_t)end & (page - 1)) == 0);
	CHECK(mpk_heap_usable_size(g, p) == (size_t)(end - p));
	CHECK_NO_FAULT(t_write_in_child(p));
	CHECK_NO_FAULT(t_write_in_child(end - 1));
	struct t_fault f = t_write_in_child(end);
	CHECK(f.faulted && f.code == SEGV_ACCERR && f.where == end);
	f = t_read_in_child(end);
	CHECK(f.faulted && f.code == SEGV_ACCERR && f.where == end);
	f = t_read_in_child(first - 1);
	CHECK(f.faulted && f.code == SEGV_ACCERR && f.where == first - 1);
	errno = 0;
	CHECK(mpk_domain_of(end) == NULL && errno == ENOENT);
}

int main(void)
{
	const size_t sizes[] = { 1, 16, 100, 4095, 4096, 5000, 70000, 1 << 20 };

	t_backend();
	mpk_domain *d = mpk_domain_create("guarded", MPK_RW, 0);
	REQUIRE(d);
	mpk_heap *g = mpk_heap_create(d, MPK_HEAP_GUARDED);
	REQUIRE(g);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
		unsigned char *p = mpk_heap_malloc(g, sizes[i]);
		REQUIRE(p);
		CHECK(mpk_domain_of(p) == d);
		t_fill(p, sizes[i], 3);
		check_block(g, p, sizes[i], 16);
		CHECK(t_intact(p, sizes[i], 3));
		CHECK(mpk_heap_free(g, p) == 0);
	}

	/* calloc, realloc (it moves, to stay flush) and aligned blocks. */
	unsigned char *c = mpk_heap_calloc(g, 3, 100);
	REQUIRE(c);
	check_block(g, c, 300, 16);
	t_fill(c, 300, 5);
	unsigned char *r = mpk_heap_realloc(g, c, 9000);
	REQUIRE(r);
	CHECK(t_intact(r, 300, 5));
	check_block(g, r, 9000, 16);
	r = mpk_heap_realloc(g, r, 40);
	REQUIRE(r);
	CHECK(t_intact(r, 40, 5));
	check_block(g, r, 40, 16);
	CHECK(mpk_heap_free(g, r) == 0);
	unsigned char *a = mpk_heap_aligned_alloc(g, 256, 1000);
	REQUIRE(a);
	CHECK(((uintptr_t)a & 255) == 0);
	check_block(g, a, 1000, 256);
	CHECK(mpk_heap_free(g, a) == 0);

	CHECK(mpk_heap_destroy(g) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
