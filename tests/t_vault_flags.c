/*
 * The kernel's view of a vault: the pages of a secret, small, page-run or
 * own-region, are locked (VmFlags lo), left out of core dumps (dd) and
 * wiped in a forked child (wf), and named after the domain in
 * /proc/self/maps where the kernel names anonymous memory.  memfd_secret
 * vaults (mpk_info().secretmem_vaults) are not copied into a child (dc)
 * instead, which maps them afresh, and are the kernel's /secretmem file;
 * their pages are never swapped (the kernel keeps them unevictable), and
 * lo shows only where the kernel also marks the mapping locked.
 * Ordinary heap memory is none of these.
 */
#include "t_heap.h"

int main(void)
{
	const size_t n[] = { 32, 3000, 20000, 50000, 700000 };
	struct t_map m;
	struct mpk_info in;

	t_backend();
	t_need_memlock(2 << 20);
	REQUIRE(mpk_info(&in) == 0);
	const char *child_flag = in.secretmem_vaults ? "dc" : "wf";
	mpk_domain *d = mpk_domain_create("vault-flags", MPK_NONE, 0);
	REQUIRE(d);
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h);
	for (size_t i = 0; i < sizeof(n) / sizeof(*n); i++) {
		unsigned char *s = mpk_secret_alloc(d, n[i]);
		REQUIRE(s);
		for (size_t off = 0; off < n[i]; off += t_page()) {
			/* memfd_secret pages are unevictable; some kernels
			 * (6.1) do not also mark the mapping locked. */
			if ((!in.secretmem_vaults && !t_vmflag(s + off, "lo")) || !t_vmflag(s + off, "dd") ||
			    !t_vmflag(s + off, child_flag)) {
				char fl[256];
				t_vmflags(s + off, fl, sizeof(fl));
				t_fail("secret of %zu bytes, offset %zu: VmFlags%s", n[i], off, fl);
				break;
			}
		}
		REQUIRE(t_map_of(s, &m));
		if (in.secretmem_vaults)
			CHECK(strstr(m.name, "secretmem") != NULL);
		else if (m.name[0]) /* kernels before 5.17 name nothing */
			CHECK(!strcmp(m.name, "[anon:mpk:vault-flags]"));
	}
	unsigned char *b = mpk_heap_malloc(h, 100);
	REQUIRE(b);
	CHECK(!t_vmflag(b, "lo") && !t_vmflag(b, "dd") && !t_vmflag(b, "wf") && !t_vmflag(b, "dc"));
	CHECK(mpk_heap_destroy(h) == 0);
	CHECK_ERR(mpk_domain_destroy(d), EBUSY); /* live secrets */
	return t_done();
}
