/* hw: MPK_RW allows reads and writes, in this thread and a child of it. */
#include "t.h"

int main(void)
{
	t_need_hw();
	mpk_domain *d = mpk_domain_create("rights-rw", MPK_NONE, 0);
	REQUIRE(d);
	CHECK(mpk_get(d) == MPK_NONE);
	volatile unsigned char *p = mpk_alloc(d, 2 * 4096);
	REQUIRE(p);
	CHECK_FAULT(t_write_in_child((void *)p), d, p);

	REQUIRE(mpk_set(d, MPK_RW) == 0);
	CHECK(mpk_get(d) == MPK_RW);
	for (int i = 0; i < 2 * 4096; i += 512)
		p[i] = (unsigned char)(i / 512 + 1);
	for (int i = 0; i < 2 * 4096; i += 512)
		CHECK(p[i] == (unsigned char)(i / 512 + 1));
	CHECK_NO_FAULT(t_write_in_child((void *)(p + 4096 + 100)));
	CHECK_NO_FAULT(t_read_in_child((void *)(p + 4096 + 100)));

	/* The same through a scope from READ. */
	REQUIRE(mpk_set(d, MPK_READ) == 0);
	MPK_WITH(d, MPK_RW) {
		CHECK(mpk_get(d) == MPK_RW);
		p[1] = 0x44;
		CHECK_NO_FAULT(t_write_in_child((void *)(p + 2)));
	}
	CHECK(mpk_get(d) == MPK_READ);
	CHECK(p[1] == 0x44);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
