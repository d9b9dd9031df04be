/*
 * The kernel's view of a vault: the pages of a secret, small, page-run or
 * own-region, are locked (VmFlags lo), left out of core dumps (dd) and
 * wiped in a forked child (wf), and named after the domain in
 * /proc/self/maps where the kernel names anonymous memory.  Ordinary heap
 * memory is none of these.
 */
#include "t_heap.h"

int main(void)
{
	const size_t n[] = { 32, 3000, 20000, 50000, 700000 };
	struct t_map m;

	t_backend();
	t_need_memlock(2 << 20);
	mpk_domain *d = mpk_domain_create("vault-flags", MPK_NONE, 0);
	REQUIRE(d);
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h);
	for (size_t i = 0; i < sizeof(n) / sizeof(*n); i++) {
		unsigned char *s = mpk_secret_alloc(d, n[i]);
		REQUIRE(s);
		for (size_t off = 0; off < n[i]; off += t_page()) {
			if (!t_vmflag(s + off, "lo") || !t_vmflag(s + off, "dd") ||
			    !t_vmflag(s + off, "wf")) {
				char fl[256];
				t_vmflags(s + off, fl, sizeof(fl));
				t_fail("secret of %zu bytes, offset %zu: VmFlags%s", n[i], off, fl);
				break;
			}
		}
		REQUIRE(t_map_of(s, &m));
		if (m.name[0]) /* kernels before 5.17 name nothing */
			CHECK(!strcmp(m.name, "[anon:mpk:vault-flags]"));
	}
	unsigned char *b = mpk_heap_malloc(h, 100);
	REQUIRE(b);
	CHECK(!t_vmflag(b, "lo") && !t_vmflag(b, "dd") && !t_vmflag(b, "wf"));
	CHECK(mpk_heap_destroy(h) == 0);
	CHECK_ERR(mpk_domain_destroy(d), EBUSY); /* live secrets */
	return t_done();
}
