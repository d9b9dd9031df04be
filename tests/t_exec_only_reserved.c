/*
 * mpk_exec_only() on address space mpkit keeps for domain memory fails
 * with EINVAL and leaves the pages PROT_NONE: a region given back
 * (reserved again in its window), and after mpk_lockdown() (in a child,
 * MPK_LOCK_ERRNO) a region and a file mapped with mpk_map_file() given
 * back, and the heap metadata area the last heap left, kept reserved.
 * The last went as far as the lockdown's filter before, which refused
 * the mprotect(): EPERM, and in kill mode the process died.  hw only:
 * soft refuses every range (ENOTSUP, t_exec_only).
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <unistd.h>

#include "t_code.h"
#include "../src/core/core.h"

static mpk_domain *d;

static void refused(void *p, const char *when)
{
	char perms[5];

	CHECK_ERR(mpk_exec_only(p, 4096), EINVAL);
	t_perms(p, perms);
	if (strncmp(perms, "---", 3))
		t_fail("%s: the pages are %s, want ---", when, perms);
	CHECK_ERR(mpk_exec_only_key(), ENOENT); /* none made, ever */
}

static uintptr_t kept_lo[64];
static int nkept;

static void each_kept(uintptr_t lo, uintptr_t hi, void *arg)
{
	(void)arg;
	(void)hi;
	if (nkept < 64)
		kept_lo[nkept++] = lo;
}

static void after_lockdown(void)
{
	void *m = mpk_alloc(d, 4096);
	int fd = memfd_create("exec-reserved", MFD_CLOEXEC);
	REQUIRE(m && fd >= 0 && ftruncate(fd, 4096) == 0);
	REQUIRE(mpk_lockdown(MPK_LOCK_ERRNO) == 0);
	REQUIRE(mpk_free(d, m) == 0);
	refused(m, "a region given back after lockdown");
	void *f = mpk_map_file(d, fd, 0, 4096);
	REQUIRE(f);
	REQUIRE(mpk_free(d, f) == 0);
	refused(f, "a file given back after lockdown");
	close(fd);
	/* The heap metadata area goes with the last heap: kept, and no
	 * address the program was given. */
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h && mpk_heap_malloc(h, 64));
	CHECK(mpk_heap_destroy(h) == 0);
	mpk__kept_each(each_kept, NULL);
	CHECK(nkept > 0);
	for (int i = 0; i < nkept; i++)
		refused((void *)kept_lo[i], "a range kept after lockdown");
}

int main(void)
{
	if (t_backend() != MPK_BACKEND_HW)
		t_skip("needs hardware protection keys (runs in the VM suite)");
	REQUIRE(d = mpk_domain_create("exec-reserved", MPK_RW, 0));
	void *m = mpk_alloc(d, 4096);
	REQUIRE(m);
	REQUIRE(mpk_free(d, m) == 0);
	refused(m, "given back");
	t_in_child(after_lockdown, "after lockdown");
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
