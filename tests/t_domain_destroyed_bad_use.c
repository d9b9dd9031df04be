/* A destroyed domain is rejected with EINVAL by every call that takes one
 * (destroying it again included), and using it disturbs nothing: not the
 * live domains, not memory handed to it, not a new domain that may reuse
 * its slot or key. */
#include "t_state.h"

int main(void)
{
	size_t page = t_page();

	t_backend();
	mpk_domain *w = mpk_domain_create("witness", MPK_RW, 0);
	mpk_domain *d = mpk_domain_create("doomed", MPK_NONE, 0);
	REQUIRE(w && d);
	unsigned char *wp = mpk_alloc(w, page);
	unsigned char *dp = mpk_alloc(d, page);
	REQUIRE(wp && dp);
	t_fill(wp, page, 2);
	REQUIRE(mpk_set(w, MPK_READ) == 0);
	/* A scope on d still open when d dies (its saved rights: NONE). */
	mpk_scope open_scope = mpk_enter(d, MPK_READ);
	REQUIRE(open_scope.domain == d);

	int domains = t_domains();
	REQUIRE(mpk_domain_destroy(d) == 0);
	CHECK(t_domains() == domains - 1);
	CHECK_ERR(mpk_domain_of(dp), ENOENT);

	/* A successor, likely in the same slot (on hw with the same key, and
	 * its memory maybe where the dead domain's was). */
	mpk_domain *n = mpk_domain_create("successor", MPK_NONE, 0);
	REQUIRE(n);
	unsigned char *np = mpk_alloc(n, page);
	REQUIRE(np);
	/* Memory that an adopt of the dead domain must leave alone. */
	unsigned char *m = t_map_anon(1);
	t_fill(m, page, 3);

	/* The successor open, so that a leave restoring d's NONE into it
	 * would show. */
	REQUIRE(mpk_set(n, MPK_RW) == 0);
	domains = t_domains();
	int keys = t_keys_in_use();
	unsigned long long mp = t_mprotects();

	CHECK_ERR(mpk_domain_destroy(d), EINVAL);
	CHECK_ERR(mpk_domain_destroy(d), EINVAL);
	CHECK_ERR(mpk_set(d, MPK_RW), EINVAL);
	CHECK_ERR(mpk_set(d, MPK_NONE), EINVAL);
	CHECK_ERR(mpk_get(d), EINVAL);
	CHECK_ERR(mpk_alloc(d, page), EINVAL);
	CHECK_ERR(mpk_adopt(d, m, page), EINVAL);
	CHECK_ERR(mpk_free(d, dp), EINVAL);
	CHECK_ERR(mpk_free(d, np), EINVAL);
	CHECK_ERR(mpk_domain_name(d), EINVAL);
	CHECK_ERR(mpk_domain_key(d), EINVAL);
	/* Leaving the scope must not restore anything into the successor,
	 * which may hold d's key or slot now. */
	CHECK_ERR(mpk_leave(&open_scope), EINVAL);
	CHECK(mpk_get(n) == MPK_RW);
	errno = 0;
	mpk_scope s = mpk_enter(d, MPK_RW);
	CHECK(s.saved == -1 && errno == EINVAL);
	CHECK(mpk_leave(&s) == 0);
	int ran = 0;
	MPK_WITH(d, MPK_RW)
		ran++;
	CHECK(ran == 0);

	/* Nothing moved. */
	CHECK(t_domains() == domains);
	CHECK(t_keys_in_use() == keys);
	CHECK(t_mprotects() == mp);
	CHECK(mpk_domain_of(dp) != d);
	CHECK_ERR(mpk_domain_of(m), ENOENT);
	CHECK(t_intact(m, page, 3));
	CHECK_NO_FAULT(t_write_in_child(m));
	CHECK(t_intact(wp, page, 2));
	CHECK_RIGHTS(w, wp, MPK_READ);
	CHECK(mpk_domain_of(np) == n);
	CHECK_RIGHTS(n, np, MPK_RW);

	/* Not a domain at all: a zeroed buffer, and NULL. */
	static long long fake[64];
	CHECK_ERR(mpk_domain_destroy((mpk_domain *)fake), EINVAL);
	CHECK_ERR(mpk_domain_destroy(NULL), EINVAL);
	CHECK_ERR(mpk_domain_name(NULL), EINVAL);
	CHECK_ERR(mpk_domain_key(NULL), EINVAL);
	CHECK(t_domains() == domains);

	CHECK(mpk_domain_destroy(n) == 0);
	CHECK(mpk_domain_destroy(w) == 0);
	CHECK(t_domains() == domains - 2);
	munmap(m, page);
	return t_done();
}
