/*
 * A domain with live secrets refuses to be destroyed (EBUSY) and nothing
 * changes: the secrets stay, intact.  Once they are freed, destroying the
 * domain takes its vault with it: its pages are unmapped, and with the last
 * vault and heap gone, the metadata domain too.
 */
#include "t_heap.h"

int main(void)
{
	t_backend();
	t_need_memlock(2 << 20);
	int domains = t_domains();
	mpk_domain *d = mpk_domain_create("vault-destroy", MPK_RW, 0);
	REQUIRE(d);
	unsigned char *a = mpk_secret_alloc(d, 32);
	unsigned char *b = mpk_secret_alloc(d, 5000);
	unsigned char *c = mpk_secret_alloc(d, 700000);
	REQUIRE(a && b && c);
	memset(a, 1, 32);
	memset(b, 2, 5000);
	memset(c, 3, 700000);
	int with_vault = t_domains();
	CHECK(with_vault >= domains + 1);

	CHECK_ERR(mpk_domain_destroy(d), EBUSY);
	CHECK(t_domains() == with_vault);
	CHECK(a[31] == 1 && b[4999] == 2 && c[699999] == 3);
	CHECK(mpk_secret_free(a) == 0 && mpk_secret_free(b) == 0);
	CHECK_ERR(mpk_domain_destroy(d), EBUSY);
	CHECK(c[0] == 3);
	CHECK(mpk_secret_free(c) == 0);

	CHECK(mpk_domain_destroy(d) == 0);
	CHECK(!t_any_usable(a, 32));
	CHECK(!t_any_usable(b, 5000));
	CHECK(t_domains() == domains);
	CHECK_ERR(mpk_domain_destroy(d), EINVAL);

	/* A new domain gets a new vault. */
	REQUIRE(d = mpk_domain_create("vault-destroy-2", MPK_RW, 0));
	unsigned char *e = mpk_secret_alloc(d, 32);
	REQUIRE(e);
	CHECK(e[0] == 0);
	CHECK(mpk_secret_free(e) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	CHECK(t_domains() == domains);
	return t_done();
}
