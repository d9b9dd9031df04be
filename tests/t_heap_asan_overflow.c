/*
 * Under AddressSanitizer (make SANITIZE=address), heap blocks are poisoned
 * around their usable bytes: a write one byte past a 16-byte block, from a
 * thread's cache or from a fresh slab, is reported at that write (with the
 * address), not later; every byte inside it is fine.  A freed block is
 * poisoned too.  Skipped in other builds.
 */
#include "t_heap.h"

static mpk_heap *h;
static char *blk;

static __attribute__((noinline)) void write_at(char *p)
{
	*(volatile char *)p = 1;
}

static void overflow(void *arg)
{
	write_at(blk + (uintptr_t)arg);
	_exit(0); /* not reached under ASan */
}

static void check_reported(size_t at, const char *what)
{
	char buf[8192], addr[32];
	int st = t_child_stderr(overflow, (void *)(uintptr_t)at, buf, sizeof(buf));

	snprintf(addr, sizeof(addr), "%p", (void *)(blk + at));
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		t_fail("%s: the write went unreported", what);
	CHECK_HAS(buf, "AddressSanitizer");
	CHECK_HAS(buf, "WRITE of size 1");
	CHECK_HAS(buf, addr + 2); /* ASan prints 0x-less or 0x-prefixed */
	CHECK_HAS(buf, "write_at");
}

int main(void)
{
#ifndef __SANITIZE_ADDRESS__
	t_skip("needs an AddressSanitizer build (make check SANITIZE=address,undefined)");
#endif
	t_backend();
	mpk_domain *d = mpk_domain_create("asan-heap", MPK_RW, 0);
	REQUIRE(d && (h = mpk_heap_create(d, 0)));
	for (int round = 0; round < 2; round++) {
		/* Round 0: a fresh slab; round 1: a block back from the cache. */
		REQUIRE(blk = mpk_heap_malloc(h, 16));
		for (int i = 0; i < 16; i++)
			write_at(blk + i);
		check_reported(16, round ? "cached block" : "fresh block");
		CHECK(mpk_heap_free(h, blk) == 0);
	}
	/* Freed: the block's own bytes are poisoned. */
	check_reported(0, "freed block");
	/* A page run, one past its usable end (a region of its own ends
	 * at the end of its mapping: a fault there, sanitizer or not). */
	REQUIRE(blk = mpk_heap_malloc(h, 50000));
	size_t cap = mpk_heap_usable_size(h, blk);
	write_at(blk + cap - 1);
	check_reported(cap, "page run");
	CHECK(mpk_heap_free(h, blk) == 0);
	CHECK(mpk_heap_destroy(h) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
