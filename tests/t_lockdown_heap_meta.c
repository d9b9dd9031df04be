/*
 * The heap's metadata area reaches the lockdown filter through the range
 * hook the heap layer registers with the core: with the area open (plain
 * memory outside the windows, MPKIT_HEAP_META=open), mprotect() and
 * munmap() of it from outside mpkit fail with EPERM after mpk_lockdown(),
 * both for the area made before lockdown and for one the heap adds after
 * (a filter of its own), while the heap goes on working.
 */
#include "t_pit.h"
#include "t_window.h"

static int t_in_fn(const struct mpk_range *r, void *arg)
{
	uintptr_t a = *(uintptr_t *)arg;
	return a >= r->lo && a < r->hi;
}

static bool t_inside_any(uintptr_t a)
{
	return mpk__ranges_each(t_in_fn, &a) != 0;
}

struct areas {
	uintptr_t lo[64];
	int n;
};

static void add_area(uintptr_t lo, uintptr_t hi, void *arg)
{
	struct areas *a = arg;
	(void)hi;
	if (a->n < 64)
		a->lo[a->n++] = lo;
}

/* The metadata area's pieces now (starts into lo). */
static int meta_areas(uintptr_t *lo, int max)
{
	struct areas a = { .n = 0 };
	mpk__layer_ranges_each(add_area, &a);
	for (int i = 0; i < a.n && i < max; i++)
		lo[i] = a.lo[i];
	return a.n < max ? a.n : max;
}

int main(void)
{
	uintptr_t a[64];
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	mpk_heap *h;
	mpk_domain *d;

	t_need_lockdown(MPK_LOCK_ERRNO);
	setenv("MPKIT_HEAP_META", "open", 1);
	REQUIRE((d = mpk_domain_create("meta-lock", MPK_RW, 0)));
	REQUIRE((h = mpk_heap_create(d, 0)));
	void *b = mpk_heap_malloc(h, 100);
	REQUIRE(b);
	int n0 = meta_areas(a, 64);
	if (!n0)
		t_fail("no heap metadata area found");
	REQUIRE(mpk_lockdown(MPK_LOCK_ERRNO) == 0);
	CHECK_ERR(mprotect((void *)a[0], page, PROT_READ), EPERM);
	CHECK_ERR(munmap((void *)a[0], page), EPERM);

	/* Enough heaps (each with its metadata) to make the area grow. */
	mpk_heap *more[200];
	int nh = 0, n1 = n0;
	while (nh < 200 && (n1 = meta_areas(a, 64)) == n0) {
		REQUIRE((more[nh] = mpk_heap_create(d, 0)));
		REQUIRE(mpk_heap_malloc(more[nh], 64));
		nh++;
	}
	printf("heap-meta areas: %d before lockdown, %d after %d more heaps\n", n0, n1, nh);
	CHECK(n1 > n0);
	for (int i = 0; i < n1; i++) {
		CHECK(!t_inside_any(a[i])); /* open: outside the windows */
		CHECK_ERR(mprotect((void *)a[i], page, PROT_READ), EPERM);
	}
	mpk_heap_free(h, b);
	CHECK(mpk_heap_malloc(h, 5000) != NULL);
	t_exit_locked();
}
