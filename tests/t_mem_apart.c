/* Each mpk_alloc region is a VMA of its own: the kernel never merges it
 * with a neighbour (another domain's region, or plain memory), so closing
 * one domain on the soft backend is one mprotect on one VMA, not a split
 * and a merge (which doubled the switch cost on small regions), and the
 * other region keeps its rights.  Both backends. */
#include "t_state.h"

enum { N = 8 };

static void check_alone(const void *p, size_t len, const char *what)
{
	struct t_map m;

	if (!t_map_of(p, &m)) {
		t_fail("%s: %p is not mapped", what, p);
		return;
	}
	if (m.lo != (unsigned long)p || m.hi != (unsigned long)p + len)
		t_fail("%s: region %p+%zu lies in VMA %lx-%lx", what, p, len, m.lo, m.hi);
}

static void scenario(void)
{
	size_t page = t_page();
	mpk_domain *a = mpk_domain_create("apart-a", MPK_RW, 0);
	mpk_domain *b = mpk_domain_create("apart-b", MPK_RW, 0);
	unsigned char *pa[N], *pb[N];

	REQUIRE(a && b);
	/* interleaved, so that the kernel would place them side by side */
	for (int i = 0; i < N; i++) {
		pa[i] = mpk_alloc(a, page);
		pb[i] = mpk_alloc(b, (size_t)(i + 1) * page);
		REQUIRE(pa[i] && pb[i]);
		pa[i][0] = 1;
		pb[i][0] = 2;
	}
	for (int i = 0; i < N; i++) {
		check_alone(pa[i], page, "open a");
		check_alone(pb[i], (size_t)(i + 1) * page, "open b");
	}

	/* Closing a leaves every b region whole and writable. */
	REQUIRE(mpk_set(a, MPK_NONE) == 0);
	for (int i = 0; i < N; i++) {
		check_alone(pa[i], page, "closed a");
		check_alone(pb[i], (size_t)(i + 1) * page, "b beside closed a");
		pb[i][page - 1] = 3;
		CHECK(pb[i][0] == 2);
	}
	REQUIRE(mpk_set(a, MPK_RW) == 0);
	for (int i = 0; i < N; i++)
		CHECK(pa[i][0] == 1);

	for (int i = 0; i < N; i++) {
		CHECK(mpk_free(a, pa[i]) == 0);
		CHECK(mpk_free(b, pb[i]) == 0);
	}
	CHECK(mpk_domain_destroy(a) == 0);
	CHECK(mpk_domain_destroy(b) == 0);
}

int main(void)
{
	return t_both_backends(scenario);
}
