/*
 * Pointers no heap handed out are caught as wild: a stack address, a libc
 * malloc() block, domain memory from mpk_alloc(), a pointer into the
 * middle of a live block (small, run, own region), the tail of a slab.  The
 * report says so; the call fails with EINVAL once a handler returns, and
 * the blocks around are untouched.
 */
#include "t_heap.h"

static mpk_heap *h;

static void wild(void *arg)
{
	mpk_heap_free(h, arg);
	_exit(0);
}

int main(void)
{
	static char report[16384];
	char want[128];
	int local = 0;

	t_backend();
	mpk_domain *d = mpk_domain_create("heap-wild", MPK_RW, 0);
	REQUIRE(d);
	h = mpk_heap_create(d, 0);
	REQUIRE(h);
	unsigned char *small = mpk_heap_malloc(h, 48);
	unsigned char *run = mpk_heap_malloc(h, 50000);
	unsigned char *big = mpk_heap_malloc(h, 900000);
	unsigned char *mem = mpk_alloc(d, 4096);
	char *libc = malloc(64);
	REQUIRE(small && run && big && mem && libc);
	t_fill(small, 48, 1);
	t_fill(run, 50000, 2);
	t_fill(big, 900000, 3);

	int st = t_child_stderr(wild, &local, report, sizeof(report));
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	snprintf(want, sizeof(want), "wild pointer %p in mpk_heap_free", (void *)&local);
	CHECK_HAS(report, want);
	CHECK_HAS(report, "no heap or vault handed it out");

	t_misuse_catch();
	void *bad[] = { &local, libc, mem, small + 16, small + 1, run + 4096, run + 16,
			big + 4096, big - 16, small - 64 };
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		CHECK_ERR(mpk_heap_free(h, bad[i]), EINVAL);
		CHECK_MISUSE(MPK_MISUSE_WILD, bad[i]);
		CHECK(t_misuse.heap == h && t_misuse.owner == NULL);
		CHECK(mpk_heap_usable_size(h, bad[i]) == 0);
		CHECK_MISUSE(MPK_MISUSE_WILD, bad[i]);
	}
	CHECK(t_intact(small, 48, 1) && t_intact(run, 50000, 2) && t_intact(big, 900000, 3));
	CHECK(mpk_heap_free(h, small) == 0 && mpk_heap_free(h, run) == 0 &&
	      mpk_heap_free(h, big) == 0);
	CHECK(t_misuses == 0);
	free(libc);
	CHECK(mpk_heap_destroy(h) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
