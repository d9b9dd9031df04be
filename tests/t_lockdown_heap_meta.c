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

static int t_in_fn(const struct t_range *r, void *arg)
{
	uintptr_t a = *(uintptr_t *)arg;
	return a >= r->lo && a < r->hi;
}

static bool t_inside_any(uintptr_t a)
{
	return mpk__ranges_each(t_in_fn, &a) != 0;
}

/* The heap metadata area's pieces: 4 MiB read-write private mappings
 * (its unit) outside every window that were not there at the start (the
 * mappings' names, where the kernel has them, are not needed). */
static uintptr_t known[256];
static int nknown;

static bool in_window(uintptr_t a)
{
	return t_inside_any(a);
}

static int meta_areas(uintptr_t *lo, int max, bool remember)
{
	char line[512];
	int n = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return 0;
	while (n < max && fgets(line, sizeof(line), f)) {
		unsigned long a, b;
		char perms[5];
		if (sscanf(line, "%lx-%lx %4s", &a, &b, perms) != 3 || strcmp(perms, "rw-p"))
			continue;
		bool old = false;
		for (int i = 0; i < nknown; i++)
			old |= known[i] == a;
		if (remember && nknown < 256)
			known[nknown++] = a;
		else if (!old && b - a == (4ul << 20) && !in_window(a))
			lo[n++] = a;
	}
	fclose(f);
	return n;
}

int main(void)
{
	uintptr_t a[64];
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	mpk_heap *h;
	mpk_domain *d;

	setenv("MPKIT_HEAP_META", "open", 1);
	REQUIRE((d = mpk_domain_create("meta-lock", MPK_RW, 0)));
	meta_areas(a, 64, true);
	REQUIRE((h = mpk_heap_create(d, 0)));
	void *b = mpk_heap_malloc(h, 100);
	REQUIRE(b);
	int n0 = meta_areas(a, 64, false);
	if (!n0)
		t_fail("no heap metadata area found");
	REQUIRE(mpk_lockdown(MPK_LOCK_ERRNO) == 0);
	CHECK_ERR(mprotect((void *)a[0], page, PROT_READ), EPERM);
	CHECK_ERR(munmap((void *)a[0], page), EPERM);

	/* Enough heaps (each with its metadata) to make the area grow. */
	mpk_heap *more[200];
	int nh = 0, n1 = n0;
	while (nh < 200 && (n1 = meta_areas(a, 64, false)) == n0) {
		REQUIRE((more[nh] = mpk_heap_create(d, 0)));
		REQUIRE(mpk_heap_malloc(more[nh], 64));
		nh++;
	}
	printf("heap-meta areas: %d before lockdown, %d after %d more heaps\n", n0, n1, nh);
	if (n1 > n0)
		for (int i = 0; i < n1; i++)
			CHECK_ERR(mprotect((void *)a[i], page, PROT_READ), EPERM);
	mpk_heap_free(h, b);
	CHECK(mpk_heap_malloc(h, 5000) != NULL);
	t_exit_locked();
}
