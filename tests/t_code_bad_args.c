/*
 * Argument checks of the code calls, with state unchanged on failure:
 * mpk_code_alloc() with a bad domain, length 0 or absurd (EINVAL, no
 * region appears); mpk_exec_only() with NULL, an unaligned address, length
 * 0 or wrapping (EINVAL), then ENOTSUP on soft; on hw domain memory
 * (EINVAL), an unmapped range (ENOMEM) and a range of mixed protections
 * (EINVAL) leave every page as it was (readable, writable).
 */
#include "t_code.h"

static void scenario(void)
{
	mpk_domain *d = mpk_domain_create("jit", MPK_READ, MPK_DOMAIN_SHARED);
	REQUIRE(d);
	CHECK_ERR(mpk_code_alloc(NULL, 4096), EINVAL);
	CHECK_ERR(mpk_code_alloc(d, 0), EINVAL);
	CHECK_ERR(mpk_code_alloc(d, SIZE_MAX), ENOMEM);
	uint8_t *p = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(p != MAP_FAILED);
	CHECK_ERR(mpk_domain_of(p), ENOENT);
	CHECK_ERR(mpk_exec_only(NULL, 4096), EINVAL);
	CHECK_ERR(mpk_exec_only(p + 1, 4096), EINVAL);
	CHECK_ERR(mpk_exec_only(p, 0), EINVAL);
	CHECK_ERR(mpk_exec_only(p, SIZE_MAX), EINVAL);
	if (mpk_backend() != MPK_BACKEND_HW) {
		CHECK_ERR(mpk_exec_only(p, 4096), ENOTSUP);
	} else {
		uint8_t *m = mpk_alloc(d, 4096);
		REQUIRE(m);
		CHECK_ERR(mpk_exec_only(m, 4096), EINVAL);
		CHECK(t_vma_pkey(m) == mpk_domain_key(d));
		CHECK(mpk_free(d, m) == 0);
		REQUIRE(munmap(p + 2 * 4096, 4096) == 0);
		CHECK_ERR(mpk_exec_only(p, 3 * 4096), ENOMEM);
		REQUIRE(mprotect(p + 4096, 4096, PROT_READ) == 0);
		CHECK_ERR(mpk_exec_only(p, 2 * 4096), EINVAL);
		CHECK(t_vma_pkey(p) == 0 && t_vma_pkey(p + 4096) == 0);
		char perms[5];
		t_perms(p + 4096, perms);
		CHECK(!strcmp(perms, "r--p"));
	}
	char perms[5];
	t_perms(p, perms);
	CHECK(!strcmp(perms, "rw-p"));
	p[0] = 1;
	CHECK(p[0] == 1);
	CHECK(mpk_domain_destroy(d) == 0);
}

int main(void)
{
	return t_both_backends(scenario);
}
