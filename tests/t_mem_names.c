/* Domain memory carries the domain's name in /proc/self/maps, as
 * [anon:mpk:NAME], for allocated and adopted regions, whatever the rights;
 * characters the kernel refuses in a name show as '_'.  Skips where the
 * kernel cannot name anonymous memory (before 5.17, or built without
 * CONFIG_ANON_VMA_NAME). */
#include <sys/prctl.h>

#include "t_state.h"

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

static void check_name(const void *p, const char *want)
{
	struct t_map m;

	if (!t_map_of(p, &m)) {
		t_fail("%p is not mapped", p);
		return;
	}
	if (strcmp(m.name, want))
		t_fail("%p is named \"%s\", want \"%s\"", p, m.name, want);
}

int main(void)
{
	size_t page = t_page();
	struct t_map m;

	/* Can this kernel name anonymous memory at all? */
	void *probe = t_map_anon(1);
	if (prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, probe, page, "mpkit-probe"))
		t_skip("the kernel cannot name anonymous mappings (PR_SET_VMA_ANON_NAME)");
	REQUIRE(t_map_of(probe, &m));
	if (strcmp(m.name, "[anon:mpkit-probe]"))
		t_skip("PR_SET_VMA_ANON_NAME worked but /proc/self/maps shows no name");
	munmap(probe, page);

	t_backend();
	mpk_domain *d = mpk_domain_create("tls-keys", MPK_RW, 0);
	mpk_domain *c = mpk_domain_create("closed one", MPK_NONE, 0);
	mpk_domain *x = mpk_domain_create("a[b]$c\\d`e", MPK_RW, 0);
	REQUIRE(d && c && x);
	unsigned char *p = mpk_alloc(d, 2 * page);
	unsigned char *q = mpk_alloc(c, page);
	unsigned char *r = mpk_alloc(x, page);
	unsigned char *a = t_map_anon(3);
	REQUIRE(p && q && r);
	REQUIRE(mpk_adopt(d, a + page, page) == 0);

	check_name(p, "[anon:mpk:tls-keys]");
	check_name(p + 2 * page - 1, "[anon:mpk:tls-keys]");
	check_name(q, "[anon:mpk:closed one]");
	check_name(r, "[anon:mpk:a_b__c_d_e]");
	check_name(a + page, "[anon:mpk:tls-keys]");
	/* only the adopted page */
	check_name(a, "");
	check_name(a + 2 * page, "");
	/* the name stays through rights changes */
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	REQUIRE(mpk_set(d, MPK_READ) == 0);
	check_name(p, "[anon:mpk:tls-keys]");
	check_name(a + page, "[anon:mpk:tls-keys]");
	/* and the domain's name itself is not sanitised */
	CHECK(!strcmp(mpk_domain_name(x), "a[b]$c\\d`e"));

	CHECK(mpk_domain_destroy(d) == 0);
	CHECK(mpk_domain_destroy(c) == 0);
	CHECK(mpk_domain_destroy(x) == 0);
	return t_done();
}
