/*
 * Freed secrets are wiped: a freed 32-byte secret reads as zeros at once
 * (its page stays mapped for its neighbours), the secret next allocated in
 * its place is zero, and a freed page-run secret reads as zeros too.
 */
#include "t_heap.h"

static int zeros(const volatile unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

int main(void)
{
	t_backend();
	t_need_memlock(1 << 20);
	mpk_domain *d = mpk_domain_create("vault-wipe", MPK_RW, 0);
	REQUIRE(d);
	unsigned char *keep = mpk_secret_alloc(d, 32);
	unsigned char *a = mpk_secret_alloc(d, 32);
	unsigned char *b = mpk_secret_alloc(d, 32);
	REQUIRE(keep && a && b);
	memset(keep, 0x11, 32);
	memset(a, 0xaa, 32);
	memset(b, 0xbb, 32);
	CHECK(mpk_secret_free(a) == 0);
	CHECK(zeros(a, 32));
	CHECK(b[0] == 0xbb && keep[31] == 0x11);

	/* Freed with the domain closed to the caller: wiped all the same. */
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	CHECK(mpk_secret_free(b) == 0);
	CHECK(mpk_get(d) == MPK_NONE);
	REQUIRE(mpk_set(d, MPK_RW) == 0);
	CHECK(zeros(b, 32));

	unsigned char *c = mpk_secret_alloc(d, 32);
	REQUIRE(c);
	CHECK(c == a || c == b);
	CHECK(zeros(c, 32));

	unsigned char *r = mpk_secret_alloc(d, 50000);
	unsigned char *r2 = mpk_secret_alloc(d, 50000); /* keeps the chunk */
	REQUIRE(r && r2);
	memset(r, 0xcc, 50000);
	CHECK(mpk_secret_free(r) == 0);
	CHECK(zeros(r, 50000));

	CHECK(mpk_secret_free(keep) == 0 && mpk_secret_free(c) == 0 && mpk_secret_free(r2) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
