/*
 * Out of domain memory (a test cap on what mpkit maps in its windows, in a
 * child: RLIMIT_AS counts a reservation whole and never what is mapped
 * inside it), mpk_secret_alloc() fails
 * with ENOMEM and maps nothing; every secret allocated before is intact and
 * still closed; freeing makes room again.  A length no memory can hold
 * fails the same way, without a limit.
 */
#include "t_heap.h"
#include "../src/core/testing.h" /* the most bytes mpkit may map in its windows */

#define MiB (1u << 20)

enum { MAXS = 100000 };
static unsigned char *s[MAXS];

static void limited(void)
{
	int n = 0;

	mpk_domain *d = mpk_domain_create("vault-enomem", MPK_NONE, 0);
	REQUIRE(d);
	unsigned char *first = mpk_secret_alloc(d, 32);
	REQUIRE(first);
	CHECK_ERR(mpk_secret_alloc(d, SIZE_MAX), ENOMEM);
	CHECK_ERR(mpk_secret_alloc(d, (size_t)1 << 46), ENOMEM);

	mpk__window_test_cap(mpk__window_mapped() + 4 * MiB);
	for (;;) {
		size_t vs = t_vsize();
		if (n == MAXS || !(s[n] = mpk_secret_alloc(d, n % 3 ? 3000 : 300000))) {
			CHECK(n < MAXS && errno == ENOMEM);
			CHECK(t_vsize() <= vs);
			break;
		}
		n++;
	}
	CHECK(n > 2);
	mpk__window_test_cap(0);
	MPK_WITH(d, MPK_RW) {
		for (int i = 0; i < n; i++)
			s[i][0] = s[i][2999] = (unsigned char)i;
	}
	CHECK_FAULT(t_read_in_child(s[n - 1]), d, s[n - 1]);
	MPK_WITH(d, MPK_READ) {
		for (int i = 0; i < n; i++)
			if (s[i][0] != (unsigned char)i || s[i][2999] != (unsigned char)i)
				t_fail("secret %d damaged", i);
	}
	mpk__window_test_cap(mpk__window_mapped() + 64 * 1024);
	CHECK_ERR(mpk_secret_alloc(d, 300000), ENOMEM);
	for (int i = 0; i < n; i += 3)
		CHECK(mpk_secret_free(s[i]) == 0);
	unsigned char *again = mpk_secret_alloc(d, 300000);
	CHECK(again != NULL);
	mpk__window_test_cap(0);
	CHECK(mpk_secret_free(again) == 0);
	for (int i = 1; i < n; i++)
		if (i % 3)
			CHECK(mpk_secret_free(s[i]) == 0);
	CHECK(mpk_secret_free(first) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
}

int main(void)
{
	t_backend();
	t_need_memlock(6 << 20);
	t_in_child(limited, "limited child");
	return t_done();
}
