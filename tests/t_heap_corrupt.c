/*
 * An overflow of one block into the header of the next is caught when the
 * next is freed (or asked its size): a "corrupted block header" report
 * naming the block, the heap and the domain, then abort by default; with a
 * handler that returns, EINVAL and the block stays allocated.  Small blocks
 * and page runs alike; a block whose header is intact frees normally.
 */
#include "t_heap.h"

static mpk_heap *h;
static unsigned char *victim;

static void free_victim(void *arg)
{
	(void)arg;
	mpk_heap_free(h, victim);
	_exit(0);
}

int main(void)
{
	static char report[16384];
	char want[160];
	struct mpk_heap_stats before, after;

	t_backend();
	mpk_domain *d = mpk_domain_create("heap-corrupt", MPK_RW, 0);
	REQUIRE(d);
	h = mpk_heap_create(d, 0);
	REQUIRE(h);

	/* Two neighbours of one size class: the second follows the first. */
	unsigned char *a = mpk_heap_malloc(h, 48);
	unsigned char *b = mpk_heap_malloc(h, 48);
	REQUIRE(a && b);
	REQUIRE(b == a + 64);
	t_overflow(a, 0x41, 64); /* 16 bytes too many: into b's header */
	victim = b;
	int st = t_child_stderr(free_victim, NULL, report, sizeof(report));
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	snprintf(want, sizeof(want), "corrupted block header before %p in mpk_heap_free (heap %p, domain \"heap-corrupt\")",
		 (void *)b, (void *)h);
	CHECK_HAS(report, want);

	t_misuse_catch();
	REQUIRE(mpk_heap_stats_get(h, &before) == 0);
	CHECK_ERR(mpk_heap_free(h, b), EINVAL);
	CHECK_MISUSE(MPK_MISUSE_CORRUPT, b);
	CHECK(mpk_heap_usable_size(h, b) == 0);
	CHECK_MISUSE(MPK_MISUSE_CORRUPT, b);
	REQUIRE(mpk_heap_stats_get(h, &after) == 0);
	CHECK(after.blocks == before.blocks);
	/* a itself is fine */
	CHECK(mpk_heap_free(h, a) == 0);

	/* A single flipped bit of the size is caught too. */
	unsigned char *c = mpk_heap_malloc(h, 100);
	REQUIRE(c);
	t_flip(c - 16, 1);
	CHECK_ERR(mpk_heap_free(h, c), EINVAL);
	CHECK_MISUSE(MPK_MISUSE_CORRUPT, c);

	/* A page run, overflowed into from the run before it. */
	unsigned char *r1 = mpk_heap_malloc(h, 40960 - 16);
	unsigned char *r2 = mpk_heap_malloc(h, 40960 - 16);
	REQUIRE(r1 && r2);
	if (r2 == r1 + 40960) {
		t_overflow(r1, 0, 40960 - 16 + 20); /* 4 bytes into r2's run */
		CHECK_ERR(mpk_heap_free(h, r2), EINVAL);
		CHECK_MISUSE(MPK_MISUSE_CORRUPT, r2);
	} else {
		t_fail("runs not adjacent: %p %p", (void *)r1, (void *)r2);
	}
	CHECK(mpk_heap_free(h, r1) == 0);
	CHECK(t_misuses == 0);
	CHECK(mpk_heap_destroy(h) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
