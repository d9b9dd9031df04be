/* SPDX-License-Identifier: MIT */
/*
 * A write into the guard page after a heap block of its own (200 KB: a
 * region with reserved guard pages around it), and into the one before
 * it, is the domain's fault, not a bare SIGSEGV: with the default handler
 * the report says "N bytes past the end of region R" (or "bytes before
 * region") and "in its guard page", then SIGABRT; a callback gets the
 * region with offset >= region_len (past the end) or addr below it
 * (before).  A write to a page no domain holds still ends in SIGSEGV.
 * Both backends.
 */
#include <signal.h>
#include <sys/mman.h>

#include "t.h"

#define BIG (200 * 1024)

static mpk_domain *d;
static mpk_heap *h;
static unsigned char *blk;
static long want_delta;

/* Exit 42 if the fault is described as the guard page past the end (or
 * before the start) of the block's region, 43 if not. */
static int catch(const struct mpk_fault *f, void *arg)
{
	(void)arg;
	bool past = f->region && f->offset >= f->region_len && f->domain == d;
	bool before = f->region && (uintptr_t)f->addr < (uintptr_t)f->region && f->domain == d;
	_exit(want_delta >= 0 ? (past ? 42 : 43) : (before ? 42 : 43));
}

struct poke {
	long delta; /* from the block's end (>= 0) or its start (< 0) */
	bool callback;
};

static void poke(void *arg)
{
	const struct poke *k = arg;
	REQUIRE(mpk_fault_handler_install(k->callback ? catch : NULL, NULL) == 0);
	t_touch_write(k->delta >= 0 ? blk + BIG + k->delta : blk + k->delta);
	_exit(0);
}

static void report(long delta, const char *want)
{
	struct poke k = { delta, false };
	struct t_child c = t_child(poke, &k, T_CHILD_STDERR);
	if (c.signal != SIGABRT)
		t_fail("write at %+ld: status %#x, want SIGABRT", delta, c.status);
	const char *w[] = { "mpkit: protection fault: write of domain \"guard\"", want, "in its guard page",
			    "backtrace, from the faulting instruction" };
	for (size_t i = 0; i < sizeof(w) / sizeof(*w); i++)
		if (!c.err || !strstr(c.err, w[i]))
			t_fail("write at %+ld: want \"%s\" in:\n%s", delta, w[i], c.err ? c.err : "");
	t_child_free(&c);
}

/* A write to a page of the program's own that is no one's domain (not
 * NULL: UBSan would stop the store before it faults), with no handler
 * before mpkit's (a sanitizer's would report it and exit). */
static void stray_write(void *arg)
{
	(void)arg;
	signal(SIGSEGV, SIG_DFL);
	void *p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(p != MAP_FAILED);
	REQUIRE(mpk_fault_handler_install(NULL, NULL) == 0);
	t_touch_write(p);
	_exit(0);
}

int main(void)
{
	REQUIRE(d = mpk_domain_create("guard", MPK_RW, 0));
	REQUIRE(h = mpk_heap_create(d, 0));
	REQUIRE(blk = mpk_heap_malloc(h, BIG));
	/* The region ends within a page of the block's end, starts before
	 * it: one page past the end and one before the start are guards. */
	report(4096 + 64, " bytes past the end of region 0x");
	report(-64, " bytes before region 0x");

	for (int i = 0; i < 2; i++) {
		struct poke k = { i ? -64 : 4096 + 64, true };
		want_delta = k.delta;
		struct t_child c = t_child(poke, &k, 0);
		if (c.exit_code != 42)
			t_fail("callback, write at %+ld: exit %d, want 42 (described as the guard page)", k.delta,
			       c.exit_code);
		t_child_free(&c);
	}

	/* A fault that is no one's still kills with SIGSEGV. */
	struct t_child n = t_child(stray_write, NULL, 0);
	CHECK(n.signal == SIGSEGV);
	t_child_free(&n);
	CHECK(mpk_heap_free(h, blk) == 0);
	CHECK(mpk_heap_destroy(h) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
