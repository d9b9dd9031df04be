/* Bad input to the save/restore and process-wide calls: EINVAL, no change. */
#include "t.h"

int main(void)
{
	mpk_domain *d, *dead;
	mpk_rights_t r;

	t_backend();
	REQUIRE(d = mpk_domain_create("bad-args", MPK_READ, 0));
	CHECK_ERR(mpk_rights_save(NULL), EINVAL);
	CHECK_ERR(mpk_rights_restore(NULL), EINVAL);
	memset(&r, 0, sizeof(r));
	CHECK_ERR(mpk_rights_restore(&r), EINVAL);
	memset(&r, 0xa5, sizeof(r));
	CHECK_ERR(mpk_rights_restore(&r), EINVAL);
	CHECK(mpk_rights_dispose(NULL) == 0);
	memset(&r, 0, sizeof(r));
	CHECK(mpk_rights_dispose(&r) == 0);

	CHECK_ERR(mpk_set_all(NULL, MPK_RW), EINVAL);
	CHECK_ERR(mpk_set_all(d, 2), EINVAL);
	CHECK_ERR(mpk_set_all(d, -1), EINVAL);
	CHECK_ERR(mpk_set_all(d, 4), EINVAL);
	CHECK_ERR(mpk_set_all((mpk_domain *)&r, MPK_RW), EINVAL);
	REQUIRE(dead = mpk_domain_create("bad-dead", MPK_RW, 0));
	REQUIRE(mpk_domain_destroy(dead) == 0);
	CHECK_ERR(mpk_set_all(dead, MPK_RW), EINVAL);
	CHECK_ERR(mpk_domain_create("bad-flags", MPK_RW, MPK_DOMAIN_SHARED | 4), EINVAL);
	CHECK_ERR(mpk_domain_create("bad-shared", 2, MPK_DOMAIN_SHARED), EINVAL);
	CHECK(mpk_get(d) == MPK_READ); /* nothing changed */
	return t_done();
}
