/* mpk_alloc() rejects a bad domain and a zero length (EINVAL) and a
 * length no memory can hold (ENOMEM, as every allocating call), and a
 * rejected alloc changes nothing: no region, no syscall, the domain's
 * memory and rights as they were. */
#include <stdint.h>

#include "t_state.h"

int main(void)
{
	size_t page = t_page();
	const size_t absurd[] = {
		SIZE_MAX, SIZE_MAX - page + 2, /* rounds up past the top */
		(size_t)PTRDIFF_MAX + 1,
	};

	t_backend();
	mpk_domain *d = mpk_domain_create("alloc", MPK_RW, 0);
	REQUIRE(d);
	unsigned char *p = mpk_alloc(d, 2 * page);
	REQUIRE(p);
	t_fill(p, 2 * page, 4);
	REQUIRE(mpk_set(d, MPK_READ) == 0);

	unsigned long long mp = t_mprotects();
	int domains = t_domains();

	CHECK_ERR(mpk_alloc(NULL, page), EINVAL);
	CHECK_ERR(mpk_alloc(d, 0), EINVAL);
	CHECK_ERR(mpk_alloc(NULL, 0), EINVAL);
	for (size_t i = 0; i < sizeof(absurd) / sizeof(*absurd); i++)
		CHECK_ERR_CASE(mpk_alloc(d, absurd[i]), ENOMEM, "len %#zx", absurd[i]);
	CHECK(t_mprotects() == mp);

	/* Larger than any address space but not absurd on its face: the
	 * kernel refuses the mapping.  ENOMEM too, and still nothing
	 * happened. */
	CHECK_ERR(mpk_alloc(d, (size_t)1 << 60), ENOMEM);

	CHECK(t_mprotects() == mp);
	CHECK(t_domains() == domains);
	CHECK(mpk_domain_of(p) == d);
	CHECK(t_intact(p, 2 * page, 4));
	CHECK_RIGHTS(d, p, MPK_READ);
	CHECK_RIGHTS(d, p + 2 * page - 1, MPK_READ);

	/* The domain still takes memory, and it follows the rights. */
	unsigned char *q = mpk_alloc(d, 1);
	CHECK(q != NULL);
	if (q)
		CHECK_RIGHTS(d, q, MPK_READ);

	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
