/*
 * MPK_HEAP_GUARDED_BELOW puts each block flush against the guard page
 * before it: the byte before the block faults at once (read and write,
 * SEGV_ACCERR at exactly that address) while the whole block is usable,
 * and the page after the block's last page is a guard too.
 */
#include "t_heap.h"

int main(void)
{
	const size_t sizes[] = { 1, 100, 4096, 5000, 70000 };
	size_t page = t_page();

	t_backend();
	mpk_domain *d = mpk_domain_create("guarded-below", MPK_RW, 0);
	REQUIRE(d);
	mpk_heap *g = mpk_heap_create(d, MPK_HEAP_GUARDED_BELOW);
	REQUIRE(g);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
		unsigned char *p = mpk_heap_malloc(g, sizes[i]);
		REQUIRE(p);
		CHECK(((uintptr_t)p & (page - 1)) == 0);
		unsigned char *last = p + (sizes[i] + page - 1) / page * page;
		t_fill(p, sizes[i], 1);
		CHECK_NO_FAULT(t_write_in_child(p));
		CHECK_NO_FAULT(t_write_in_child(p + sizes[i] - 1));
		struct t_fault f = t_write_in_child(p - 1);
		CHECK(f.faulted && f.code == SEGV_ACCERR && f.where == p - 1);
		f = t_read_in_child(p - 1);
		CHECK(f.faulted && f.code == SEGV_ACCERR && f.where == p - 1);
		f = t_read_in_child(last);
		CHECK(f.faulted && f.code == SEGV_ACCERR && f.where == last);
		CHECK(t_intact(p, sizes[i], 1));
		CHECK(mpk_heap_free(g, p) == 0);
	}
	/* An alignment above the page size is kept, flush all the same. */
	unsigned char *a = mpk_heap_aligned_alloc(g, 1 << 16, 10);
	REQUIRE(a);
	CHECK(((uintptr_t)a & 0xffff) == 0);
	struct t_fault f = t_write_in_child(a - 1);
	CHECK(f.faulted && f.code == SEGV_ACCERR && f.where == a - 1);
	CHECK(mpk_heap_free(g, a) == 0);
	CHECK(mpk_heap_destroy(g) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
