/* mpk_alloc() gives zeroed memory rounded up to whole pages, as many
 * regions per domain as asked, and every one of them follows the domain's
 * rights. */
#include <stdint.h>

#include "t_state.h"

static int all_zero(const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return 0;
	return 1;
}

int main(void)
{
	size_t page = t_page();
	const size_t lens[] = { 1, 100, page - 1, page, page + 1, 3 * page };
	enum { N = sizeof(lens) / sizeof(*lens) };
	unsigned char *r[N];

	t_backend();
	mpk_domain *d = mpk_domain_create("alloc-many", MPK_RW, 0);
	REQUIRE(d);
	for (int i = 0; i < N; i++) {
		size_t len = (lens[i] + page - 1) / page * page;
		r[i] = mpk_alloc(d, lens[i]);
		REQUIRE(r[i]);
		CHECK(((uintptr_t)r[i] & (page - 1)) == 0);
		/* zeroed up to the page end, and all of it is usable */
		CHECK(all_zero(r[i], len));
		r[i][0] = (unsigned char)(i + 1);
		r[i][len - 1] = (unsigned char)(i + 1);
		CHECK(mpk_domain_of(r[i] + len - 1) == d);
	}
	/* distinct regions */
	for (int i = 0; i < N; i++)
		for (int j = 0; j < i; j++) {
			size_t li = (lens[i] + page - 1) / page * page;
			size_t lj = (lens[j] + page - 1) / page * page;
			CHECK(r[i] + li <= r[j] || r[j] + lj <= r[i]);
		}

	/* Every region obeys each rights change, at its first and last byte. */
	const int states[] = { MPK_NONE, MPK_READ, MPK_RW, MPK_NONE };
	for (size_t s = 0; s < sizeof(states) / sizeof(*states); s++) {
		REQUIRE(mpk_set(d, states[s]) == 0);
		for (int i = 0; i < N; i++) {
			size_t len = (lens[i] + page - 1) / page * page;
			CHECK_RIGHTS(d, r[i], states[s]);
			CHECK_RIGHTS(d, r[i] + len - 1, states[s]);
		}
	}
	REQUIRE(mpk_set(d, MPK_READ) == 0);
	for (int i = 0; i < N; i++) {
		size_t len = (lens[i] + page - 1) / page * page;
		CHECK(r[i][0] == i + 1 && r[i][len - 1] == i + 1);
	}

	/* A region allocated while the domain is closed is closed too, and
	 * zeroed once opened. */
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	unsigned char *late = mpk_alloc(d, 2 * page);
	REQUIRE(late);
	CHECK_RIGHTS(d, late + page, MPK_NONE);
	REQUIRE(mpk_set(d, MPK_READ) == 0);
	CHECK(all_zero(late, 2 * page));
	CHECK_RIGHTS(d, late, MPK_READ);

	/* Memory given back and taken again is zeroed again. */
	REQUIRE(mpk_set(d, MPK_RW) == 0);
	memset(late, 0xee, 2 * page);
	REQUIRE(mpk_free(d, late) == 0);
	late = mpk_alloc(d, 2 * page);
	REQUIRE(late);
	CHECK(all_zero(late, 2 * page));

	/* A lone one-byte region in its own domain is exactly one page. */
	mpk_domain *e = mpk_domain_create("alloc-one", MPK_RW, 0);
	REQUIRE(e);
	unsigned char *one = mpk_alloc(e, 1);
	REQUIRE(one);
	one[page - 1] = 1;
	CHECK(mpk_domain_of(one + page - 1) == e);
	CHECK(mpk_domain_of(one + page) != e);
	CHECK(mpk_domain_of(one - 1) != e);

	CHECK(mpk_domain_destroy(d) == 0);
	CHECK(mpk_domain_destroy(e) == 0);
	return t_done();
}
