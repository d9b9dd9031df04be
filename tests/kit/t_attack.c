/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE /* program_invocation_short_name */
#include "t_attack.h"

enum { SWEEP_MAX = 1024 };

static int by_addr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const struct t_span *)a)->p;
	uintptr_t y = (uintptr_t)((const struct t_span *)b)->p;
	return x < y ? -1 : x > y;
}

static int overlap(const struct t_span *a, const struct t_span *b)
{
	uintptr_t x = (uintptr_t)a->p, y = (uintptr_t)b->p;
	return x < y + b->len && y < x + a->len;
}

void t_attack_sweep(mpk_heap *h, const struct t_span *keep, int nkeep)
{
	/* each size class kind: small slabs, page runs, big (own region) */
	static const size_t sizes[] = { 1, 8, 24, 48, 64, 100, 200, 500, 1000, 2000, 3000,
					5000, 20000, 70000, 200000 };
	static struct t_span got[SWEEP_MAX];
	mpk_domain *d = mpk_heap_domain(h);
	int n = 0;

	REQUIRE(d);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(*sizes); s++)
		for (int i = 0; i < (sizes[s] > 10000 ? 8 : 64); i++) {
			void *p = mpk_heap_malloc(h, sizes[s]);
			REQUIRE(p && n < SWEEP_MAX);
			got[n].p = p;
			got[n].len = mpk_heap_usable_size(h, p);
			if (got[n].len < sizes[s])
				t_fail("block %p of %zu bytes: usable size %zu", p, sizes[s], got[n].len);
			/* out of the heap: in no domain, or another's */
			if (mpk_domain_of(p) != d || mpk_domain_of((char *)p + got[n].len - 1) != d)
				t_fail("block %p of %zu bytes lies outside the heap's domain", p, sizes[s]);
			for (int k = 0; k < nkeep; k++)
				if (overlap(&got[n], &keep[k]))
					t_fail("block %p+%zu overlaps %p+%zu", p, got[n].len, keep[k].p,
					       keep[k].len);
			n++;
		}
	qsort(got, (size_t)n, sizeof(*got), by_addr);
	for (int i = 1; i < n; i++)
		if (overlap(&got[i - 1], &got[i]))
			t_fail("blocks %p+%zu and %p+%zu overlap", got[i - 1].p, got[i - 1].len, got[i].p,
			       got[i].len);
	for (int i = 0; i < n; i++)
		CHECK(mpk_heap_free(h, (void *)got[i].p) == 0);
}

/* The child of t_attack_reported(): the default misuse action. */
struct t_attack_call {
	void (*fn)(void *);
	void *arg;
};

static void t_attack_default(void *call)
{
	const struct t_attack_call *k = call;
	REQUIRE(mpk_misuse_handler_set(NULL, NULL) == 0);
	k->fn(k->arg);
}

void t_attack_reported(void (*fn)(void *), void *arg, const char *what, const void *addr,
		       const char *call)
{
	char want[256];
	struct t_attack_call k = { fn, arg };
	struct t_child c = t_child(t_attack_default, &k, T_CHILD_STDERR);

	if (c.signal != SIGABRT)
		t_fail("%s %p: child status %#x, want death by SIGABRT", what, addr, c.status);
	snprintf(want, sizeof(want), "mpkit: heap misuse: %s %p in %s", what, addr, call);
	CHECK_HAS(c.err, want);
	CHECK_HAS(c.err, "mpkit:   backtrace:\n");
	/* the frames reach the caller: this test's binary */
	snprintf(want, sizeof(want), "/%s+0x", program_invocation_short_name);
	CHECK_HAS(c.err, want);
	t_child_free(&c);
}

void t_attack_copy(void *to, const void *from, size_t n)
{
	for (size_t i = 0; i < n; i++)
		((volatile unsigned char *)to)[i] = ((const volatile unsigned char *)from)[i];
}

void t_attack_both_modes(void (*attack)(const char *meta))
{
	t_misuse_catch();
	attack("open");
	attack("closed");
	CHECK(t_misuses == 0);
	t_setenv("MPKIT_HEAP_META", NULL);
}
