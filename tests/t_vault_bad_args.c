/*
 * The secret calls reject bad input with the documented error and change
 * nothing: mpk_secret_alloc() a bad or destroyed domain or length 0
 * (EINVAL), a length no memory can hold (ENOMEM); the rights calls anything
 * but a live secret (EINVAL), leaving the caller's rights alone;
 * mpk_secret_free(NULL) is a no-op.
 */
#include "t_heap.h"

int main(void)
{
	int local;

	t_backend();
	t_need_memlock(1 << 20);
	mpk_domain *d = mpk_domain_create("vault-bad", MPK_READ, 0);
	mpk_domain *gone = mpk_domain_create("vault-gone", MPK_RW, 0);
	REQUIRE(d && gone && mpk_domain_destroy(gone) == 0);
	int domains = t_domains(), keys = t_keys_in_use();
	unsigned long long mp = t_mprotects();

	CHECK_ERR(mpk_secret_alloc(NULL, 32), EINVAL);
	CHECK_ERR(mpk_secret_alloc(gone, 32), EINVAL);
	CHECK_ERR(mpk_secret_alloc(d, 0), EINVAL);
	CHECK_ERR(mpk_secret_alloc(d, SIZE_MAX), ENOMEM);
	CHECK(t_domains() == domains && t_keys_in_use() == keys);
	CHECK(t_mprotects() == mp);
	CHECK(mpk_domain_destroy(d) == 0); /* no vault was made */
	REQUIRE(d = mpk_domain_create("vault-bad", MPK_READ, 0));

	unsigned char *s = mpk_secret_alloc(d, 32);
	REQUIRE(s);
	domains = t_domains();
	keys = t_keys_in_use();
	void *not_secret[] = { NULL, &local, s + 16, s - 16 };
	for (size_t i = 0; i < sizeof(not_secret) / sizeof(*not_secret); i++) {
		CHECK_ERR(mpk_secret_noaccess(not_secret[i]), EINVAL);
		CHECK_ERR(mpk_secret_readonly(not_secret[i]), EINVAL);
		CHECK_ERR(mpk_secret_readwrite(not_secret[i]), EINVAL);
		CHECK(mpk_get(d) == MPK_READ);
	}
	CHECK_ERR(mpk_secret_alloc(d, 0), EINVAL);
	CHECK(mpk_secret_free(NULL) == 0);
	CHECK(t_domains() == domains && t_keys_in_use() == keys);
	CHECK(mpk_get(d) == MPK_READ);
	CHECK(mpk_secret_free(s) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
