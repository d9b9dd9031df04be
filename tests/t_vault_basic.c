/*
 * Secrets: zeroed, 16-byte aligned, in their domain, many to a page (a
 * hundred 32-byte keys take one page, not three hundred), opened and closed
 * for the calling thread with mpk_secret_readonly/readwrite/noaccess (which
 * act on the whole domain), and allocating and freeing leaves the caller's
 * rights as they were, whatever they are.
 */
#include "t_heap.h"

static int zeros(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

int main(void)
{
	enum { KEYS = 100 };
	unsigned char *k[KEYS];
	size_t page = t_page();

	t_backend();
	t_need_memlock(2 << 20);
	mpk_domain *d = mpk_domain_create("vault-basic", MPK_NONE, 0);
	REQUIRE(d);
	for (int i = 0; i < KEYS; i++) {
		k[i] = mpk_secret_alloc(d, 32);
		REQUIRE(k[i]);
		CHECK(((uintptr_t)k[i] & 15) == 0);
		CHECK(mpk_domain_of(k[i]) == d);
		CHECK(mpk_get(d) == MPK_NONE);
	}
	int pages = 1;
	for (int i = 1; i < KEYS; i++)
		pages += ((uintptr_t)k[i] & ~(page - 1)) != ((uintptr_t)k[i - 1] & ~(page - 1));
	CHECK(pages == 1);

	/* Closed by default; then open, as asked, for this thread. */
	CHECK_RIGHTS(d, k[0], MPK_NONE);
	CHECK(mpk_secret_readonly(k[7]) == 0);
	CHECK_RIGHTS(d, k[KEYS - 1], MPK_READ);
	for (int i = 0; i < KEYS; i++)
		CHECK(zeros(k[i], 32));
	CHECK(mpk_secret_readwrite(k[0]) == 0);
	CHECK_RIGHTS(d, k[3], MPK_RW);
	for (int i = 0; i < KEYS; i++)
		t_fill(k[i], 32, (unsigned)i);
	CHECK(mpk_secret_noaccess(k[0]) == 0);
	CHECK_RIGHTS(d, k[50], MPK_NONE);
	MPK_WITH(d, MPK_READ) {
		for (int i = 0; i < KEYS; i++)
			CHECK(t_intact(k[i], 32, (unsigned)i));
	}
	CHECK(mpk_get(d) == MPK_NONE);

	/* Every size, under every right: zeroed, rights untouched. */
	const size_t sizes[] = { 1, 16, 17, 100, 3000, 5000, 70000, 700000 };
	const int rights[] = { MPK_NONE, MPK_READ, MPK_RW };
	for (size_t r = 0; r < 3; r++)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
			REQUIRE(mpk_set(d, rights[r]) == 0);
			unsigned char *s = mpk_secret_alloc(d, sizes[i]);
			REQUIRE(s);
			CHECK(mpk_get(d) == rights[r]);
			CHECK(mpk_domain_of(s + sizes[i] - 1) == d);
			MPK_WITH(d, MPK_RW) {
				CHECK(zeros(s, sizes[i]));
				t_fill(s, sizes[i], 1);
			}
			CHECK(mpk_get(d) == rights[r]);
			CHECK(mpk_secret_free(s) == 0);
			CHECK(mpk_get(d) == rights[r]);
		}
	CHECK(mpk_set(d, MPK_NONE) == 0);
	for (int i = 0; i < KEYS; i++)
		CHECK(mpk_secret_free(k[i]) == 0);
	CHECK(mpk_get(d) == MPK_NONE);
	CHECK(mpk_secret_free(NULL) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
