/*
 * Attack (and a plain bug): calloc handing out bytes the program wrote.
 * A free page run stays mapped read-write whether or not its pages were
 * purged (MADV_DONTNEED), and so does the never-used rest of a chunk: a
 * write through a dangling pointer into a purged run, or a linear
 * overflow from the last block into the chunk's untouched tail, lands
 * there.  Neither is zero any more, so mpk_heap_calloc() must clear them
 * like any other memory a program could have written since it was last
 * zeroed.  Page runs of 40 KiB (one the thread caches take) and 120 KiB
 * (one they do not), with the metadata open and sealed, on both backends.
 * tests/t_malloc_calloc does the same through the drop-in.
 */
#include <time.h>

#include "t_attack.h"

enum { FILLERS = 10, FILLER = 120 << 10, PAT = 0xa5 };

static mpk_heap *h;

#if defined(__SANITIZE_ADDRESS__)
__attribute__((no_sanitize_address))
#endif
static void scribble(unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		((volatile unsigned char *)p)[i] = PAT;
}

/* Whether q's n bytes are zero; says where they are not. */
static void check_zero(const char *what, size_t size, const unsigned char *q, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (q[i]) {
			t_fail("%s, %zu bytes: calloc's block %p has 0x%02x at +%zu", what, size, (void *)q,
			       q[i], i);
			return;
		}
}

/* Its cache back to the arena, where runs are purged. */
static void flush(void)
{
	struct mpk_heap_stats st;

	REQUIRE(mpk_heap_stats_get(h, &st) == 0);
}

/* An overflow from the block before into the chunk's never-used pages. */
static void fresh_tail(size_t size)
{
	unsigned char *a = mpk_heap_malloc(h, size);
	REQUIRE(a);
	size_t reach = 2 * size + 8192; /* past a's end, over the next run's place */
	scribble(a + size, reach);
	unsigned char *q = mpk_heap_calloc(h, 1, size);
	REQUIRE(q);
	/* Where a write reaches first: the run right after a's. */
	if (q <= a || q >= a + size + reach)
		t_fail("fresh tail, %zu bytes: calloc gave %p, not after %p: the attack missed", size,
		       (void *)q, (void *)a);
	check_zero("an overflow into the chunk's fresh tail", size, q, size);
	CHECK(mpk_heap_free(h, q) == 0);
	CHECK(mpk_heap_free(h, a) == 0);
	flush();
}

/* A dangling write into a run freed, then purged by the decay. */
static void purged(size_t size)
{
	unsigned char *x1 = mpk_heap_malloc(h, size), *v = mpk_heap_malloc(h, size);
	unsigned char *x2 = mpk_heap_malloc(h, size), *fill[FILLERS];
	REQUIRE(x1 && v && x2);
	for (int i = 0; i < FILLERS; i++)
		REQUIRE(fill[i] = mpk_heap_malloc(h, FILLER));
	CHECK(mpk_heap_free(h, v) == 0);
	flush();
	/* Past the decay time (250 ms), the next frees purge v's run: the
	 * fillers take the arena's dirty pages past what it keeps. */
	struct timespec ts = { 0, 300 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	for (int i = 0; i < FILLERS; i++)
		CHECK(mpk_heap_free(h, fill[i]) == 0);
	flush();
	scribble(v, size); /* through the dangling pointer */
	unsigned char *q = mpk_heap_calloc(h, 1, size);
	REQUIRE(q);
	if (q != v)
		t_fail("purged run, %zu bytes: calloc gave %p, not the freed %p: the attack missed", size,
		       (void *)q, (void *)v);
	check_zero("a dangling write into a purged run", size, q, size);
	CHECK(mpk_heap_free(h, q) == 0);
	CHECK(mpk_heap_free(h, x1) == 0);
	CHECK(mpk_heap_free(h, x2) == 0);
}

static void mode(const char *meta)
{
	static const size_t sizes[] = { 40 << 10, 120 << 10 };
	struct mpk_heap_stats st;

	t_setenv("MPKIT_HEAP_META", meta);
	mpk_domain *d = mpk_domain_create("attack-calloc", MPK_RW, 0);
	REQUIRE(d);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
		/* A heap of its own each time: a chunk with a fresh tail. */
		REQUIRE(h = mpk_heap_create(d, 0));
		REQUIRE(mpk_heap_stats_get(h, &st) == 0);
		CHECK(st.meta_closed == !strcmp(meta, "closed"));
		fresh_tail(sizes[i]);
		purged(sizes[i]);
		CHECK(mpk_heap_destroy(h) == 0);
	}
	CHECK(mpk_domain_destroy(d) == 0);
}

static void scenario(void)
{
	t_attack_both_modes(mode);
}

int main(void)
{
	return t_both_backends(scenario);
}
