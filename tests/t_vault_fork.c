/*
 * A forked child sees every secret as zeros (MADV_WIPEONFORK), small,
 * page-run and own-region ones alike, while the parent keeps them; heap
 * blocks, which are not secrets, are copied as usual.
 */
#include "t_heap.h"

static unsigned char *s[3];
static unsigned char *blk;
static const size_t n[3] = { 32, 50000, 700000 };
static mpk_domain *d;

static void child(void *arg)
{
	(void)arg;
	int ok = 1;
	MPK_WITH(d, MPK_READ) {
		for (int i = 0; i < 3; i++)
			for (size_t j = 0; j < n[i]; j++)
				ok &= s[i][j] == 0;
		ok &= t_intact(blk, 64, 9);
	}
	_exit(ok ? 0 : 1);
}

int main(void)
{
	t_backend();
	t_need_memlock(2 << 20);
	REQUIRE(d = mpk_domain_create("vault-fork", MPK_NONE, 0));
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h);
	MPK_WITH(d, MPK_RW) {
		for (int i = 0; i < 3; i++) {
			REQUIRE(s[i] = mpk_secret_alloc(d, n[i]));
			memset(s[i], 0x77, n[i]);
		}
		REQUIRE(blk = mpk_heap_malloc(h, 64));
		t_fill(blk, 64, 9);
	}
	struct t_fault f = t_run_child(child, NULL);
	CHECK(!f.faulted && f.exit_code == 0);
	MPK_WITH(d, MPK_READ) {
		for (int i = 0; i < 3; i++)
			CHECK(s[i][0] == 0x77 && s[i][n[i] - 1] == 0x77);
	}
	for (int i = 0; i < 3; i++)
		CHECK(mpk_secret_free(s[i]) == 0);
	CHECK(mpk_heap_destroy(h) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
