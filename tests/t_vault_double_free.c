/*
 * Secret misuse is caught: a double free (report naming the vault's
 * domain, then abort by default), a pointer into a secret, a stack
 * address, a heap block given to mpk_secret_free() (foreign: the report
 * names its heap); with a handler that returns, EINVAL, and the other
 * secrets are untouched.  The rights calls refuse them too (EINVAL).
 */
#include "t_heap.h"

static unsigned char *gone;

static void again(void *arg)
{
	(void)arg;
	mpk_secret_free(gone);
	_exit(0);
}

int main(void)
{
	static char report[16384];
	char want[160];
	int local;

	t_backend();
	t_need_memlock(2 << 20);
	mpk_domain *d = mpk_domain_create("vault-df", MPK_RW, 0);
	REQUIRE(d);
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h);
	unsigned char *keep = mpk_secret_alloc(d, 32);
	REQUIRE(keep && (gone = mpk_secret_alloc(d, 32)));
	memset(keep, 0x33, 32);
	CHECK(mpk_secret_free(gone) == 0);

	int st = t_child_stderr(again, NULL, report, sizeof(report));
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	snprintf(want, sizeof(want), "double free of %p in mpk_secret_free (vault of domain \"vault-df\")",
		 (void *)gone);
	CHECK_HAS(report, want);

	t_misuse_catch();
	CHECK_ERR(mpk_secret_free(gone), EINVAL);
	CHECK_MISUSE(MPK_MISUSE_DOUBLE_FREE, gone);
	CHECK(t_misuse.heap == NULL && t_misuse.domain == d);

	unsigned char *big = mpk_secret_alloc(d, 700000);
	REQUIRE(big);
	CHECK(mpk_secret_free(big) == 0);
	CHECK_ERR(mpk_secret_free(big), EINVAL);
	CHECK_MISUSE(MPK_MISUSE_WILD, big); /* its region is gone */

	void *blk = mpk_heap_malloc(h, 32);
	REQUIRE(blk);
	CHECK_ERR(mpk_secret_free(blk), EINVAL);
	CHECK_MISUSE(MPK_MISUSE_FOREIGN, blk);
	CHECK(t_misuse.owner == h && t_misuse.owner_domain == d && t_misuse.heap == NULL);

	void *bad[] = { keep + 16, keep + 1, &local };
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		CHECK_ERR(mpk_secret_free(bad[i]), EINVAL);
		CHECK_MISUSE(MPK_MISUSE_WILD, bad[i]);
		CHECK_ERR(mpk_secret_readonly(bad[i]), EINVAL);
	}
	CHECK_ERR(mpk_secret_readonly(gone), EINVAL);
	CHECK_ERR(mpk_secret_noaccess(blk), EINVAL);
	CHECK(mpk_get(d) == MPK_RW);
	CHECK(t_misuses == 0);

	for (int i = 0; i < 32; i++)
		CHECK(keep[i] == 0x33);
	CHECK(mpk_secret_free(keep) == 0 && mpk_heap_free(h, blk) == 0);
	CHECK(mpk_heap_destroy(h) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
