/* mpk_domain_of() names the domain owning any address inside its regions,
 * allocated or adopted, first byte to last; addresses outside every region
 * give NULL with ENOENT. */
#include "t_state.h"

static int global;

int main(void)
{
	size_t page = t_page();
	int local;

	t_backend();
	mpk_domain *d = mpk_domain_create("of-d", MPK_NONE, 0);
	mpk_domain *e = mpk_domain_create("of-e", MPK_READ, 0);
	REQUIRE(d && e);
	unsigned char *p = mpk_alloc(d, 3 * page);
	unsigned char *q = mpk_alloc(e, 2 * page);
	unsigned char *m = t_map_anon(2);
	REQUIRE(p && q);
	REQUIRE(mpk_adopt(e, m, 2 * page) == 0);

	const size_t offs[] = { 0, 1, page - 1, page, page + 123, 2 * page - 1 };
	for (size_t i = 0; i < sizeof(offs) / sizeof(*offs); i++) {
		if (mpk_domain_of(p + offs[i]) != d)
			t_fail("p + %zu not in d", offs[i]);
		if (mpk_domain_of(q + offs[i]) != e)
			t_fail("q + %zu not in e", offs[i]);
		if (mpk_domain_of(m + offs[i]) != e)
			t_fail("m + %zu not in e", offs[i]);
	}
	CHECK(mpk_domain_of(p + 3 * page - 1) == d);

	/* Outside: memory the domains do not own. */
	void *heap = malloc(16);
	REQUIRE(heap);
	CHECK_ERR(mpk_domain_of(NULL), ENOENT);
	CHECK_ERR(mpk_domain_of(&local), ENOENT);
	CHECK_ERR(mpk_domain_of(&global), ENOENT);
	CHECK_ERR(mpk_domain_of(heap), ENOENT);
	CHECK_ERR(mpk_domain_of((void *)main), ENOENT);
	CHECK_ERR(mpk_domain_of((void *)-1), ENOENT);
	free(heap);

	/* The edges of a lone region: the bytes just outside belong to
	 * someone else, if to anyone. */
	mpk_domain *f = mpk_domain_create("of-lone", MPK_NONE, 0);
	REQUIRE(f);
	unsigned char *l = mpk_alloc(f, 2 * page);
	REQUIRE(l);
	CHECK(mpk_domain_of(l) == f && mpk_domain_of(l + 2 * page - 1) == f);
	CHECK(mpk_domain_of(l - 1) != f);
	CHECK(mpk_domain_of(l + 2 * page) != f);

	/* Lookups change nothing. */
	CHECK_RIGHTS(d, p + page, MPK_NONE);
	CHECK_RIGHTS(e, q, MPK_READ);
	CHECK_RIGHTS(e, m + page, MPK_READ);

	CHECK(mpk_domain_destroy(d) == 0);
	CHECK_ERR(mpk_domain_of(p + page), ENOENT);
	CHECK(mpk_domain_of(q) == e);
	CHECK(mpk_domain_destroy(e) == 0);
	CHECK(mpk_domain_destroy(f) == 0);
	return t_done();
}
