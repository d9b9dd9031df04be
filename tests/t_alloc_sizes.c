/*
 * One rule for sizes across every allocating call (include/mpkit.h): a
 * size no memory can hold, or an n * size that overflows, is ENOMEM
 * (before: EINVAL from mpk_alloc(), mpk_code_alloc() and mpk_map_file(),
 * ENOMEM from heaps and vaults); zero is EINVAL where the call cannot give
 * zero bytes (pages, secrets) and a block of its own from a heap.  A
 * refused size changes nothing: no mprotect(), no mapping, the block a
 * realloc was given intact.
 */
#include "t_heap.h"

int main(void)
{
	size_t page = t_page();
	const size_t huge[] = {
		SIZE_MAX, SIZE_MAX - page + 2, /* rounds up past the top */
		(size_t)PTRDIFF_MAX + 1, (size_t)1 << 60,
	};

	t_backend();
	t_need_memlock(1 << 20);
	mpk_domain *d = mpk_domain_create("sizes", MPK_RW, 0);
	REQUIRE(d);
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h);
	unsigned char *blk = mpk_heap_malloc(h, 64);
	unsigned char *keep = mpk_secret_alloc(d, 32); /* the vault exists */
	REQUIRE(blk && keep);
	t_fill(blk, 64, 7);
	char path[] = "/tmp/mpkit-sizes-XXXXXX";
	int fd = mkstemp(path);
	REQUIRE(fd >= 0 && ftruncate(fd, (off_t)page) == 0);
	unlink(path);

	unsigned long long mp = t_mprotects();
	size_t vs = t_vsize();
	for (size_t i = 0; i < sizeof(huge) / sizeof(*huge); i++) {
		size_t n = huge[i];
		CHECK_ERR_CASE(mpk_alloc(d, n), ENOMEM, "mpk_alloc %#zx", n);
		CHECK_ERR_CASE(mpk_code_alloc(d, n), ENOMEM, "mpk_code_alloc %#zx", n);
		/* (1 << 60 is first longer than the file: EINVAL, as documented) */
		if (n > PTRDIFF_MAX)
			CHECK_ERR_CASE(mpk_map_file(d, fd, 0, n), ENOMEM, "mpk_map_file %#zx", n);
		CHECK_ERR_CASE(mpk_heap_malloc(h, n), ENOMEM, "mpk_heap_malloc %#zx", n);
		CHECK_ERR_CASE(mpk_heap_calloc(h, 1, n), ENOMEM, "mpk_heap_calloc %#zx", n);
		CHECK_ERR_CASE(mpk_heap_aligned_alloc(h, 64, n), ENOMEM, "mpk_heap_aligned_alloc %#zx", n);
		CHECK_ERR_CASE(mpk_heap_realloc(h, NULL, n), ENOMEM, "mpk_heap_realloc NULL %#zx", n);
		CHECK_ERR_CASE(mpk_heap_realloc(h, blk, n), ENOMEM, "mpk_heap_realloc %#zx", n);
		CHECK_ERR_CASE(mpk_secret_alloc(d, n), ENOMEM, "mpk_secret_alloc %#zx", n);
		CHECK_ERR_CASE(mpk_secret_allocarray(d, 1, n), ENOMEM, "mpk_secret_allocarray %#zx", n);
	}
	/* n * size past SIZE_MAX, and a product that wraps to 0. */
	const size_t wrap = (size_t)1 << (sizeof(size_t) * 4);
	CHECK_ERR(mpk_heap_calloc(h, SIZE_MAX / 2, 3), ENOMEM);
	CHECK_ERR(mpk_heap_calloc(h, wrap, wrap), ENOMEM);
	CHECK_ERR(mpk_secret_allocarray(d, SIZE_MAX / 2, 3), ENOMEM);
	CHECK_ERR(mpk_secret_allocarray(d, wrap, wrap), ENOMEM);
	/* Zero where no zero-byte object can be made. */
	CHECK_ERR(mpk_alloc(d, 0), EINVAL);
	CHECK_ERR(mpk_code_alloc(d, 0), EINVAL);
	CHECK_ERR(mpk_map_file(d, fd, 0, 0), EINVAL);
	CHECK_ERR(mpk_secret_alloc(d, 0), EINVAL);
	CHECK_ERR(mpk_secret_allocarray(d, 0, 32), EINVAL);
	CHECK_ERR(mpk_secret_allocarray(d, 32, 0), EINVAL);
	/* A bad domain is EINVAL before any size. */
	CHECK_ERR(mpk_alloc(NULL, SIZE_MAX), EINVAL);
	CHECK_ERR(mpk_secret_allocarray(NULL, SIZE_MAX / 2, 3), EINVAL);
	CHECK(t_mprotects() == mp && t_vsize() == vs);
	CHECK(t_intact(blk, 64, 7));

	/* A heap gives zero bytes a block of its own. */
	void *z[3] = { mpk_heap_malloc(h, 0), mpk_heap_calloc(h, 0, 8), mpk_heap_aligned_alloc(h, 64, 0) };
	for (int i = 0; i < 3; i++) {
		CHECK(z[i] != NULL && mpk_heap_usable_size(h, z[i]) >= 1);
		CHECK(mpk_heap_free(h, z[i]) == 0);
	}

	close(fd);
	CHECK(mpk_heap_free(h, blk) == 0 && mpk_secret_free(keep) == 0);
	CHECK(mpk_heap_destroy(h) == 0 && mpk_domain_destroy(d) == 0);
	return t_done();
}
