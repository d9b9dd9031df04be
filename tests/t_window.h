/* SPDX-License-Identifier: MIT */
/* Internal window functions the window tests call (libmpkit.a, window.h). */
#ifndef T_WINDOW_H
#define T_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

#include "t_state.h"

void *mpk__window_carve(size_t len, size_t align);
void mpk__window_uncarve(void *p, size_t len);
int mpk__region_register(mpk_domain *d, void *p, size_t len, bool add);
struct t_range {
	uintptr_t lo, hi;
	int kind; /* 1 window, 2 adopted */
};
int mpk__ranges_each(int (*fn)(const struct t_range *r, void *arg), void *arg);
uint64_t mpk__ranges_gen(void);

static int t_count_windows_fn(const struct t_range *r, void *arg)
{
	if (r->kind == 1)
		++*(int *)arg;
	return 0;
}

/* How many windows there are now. */
static inline int t_windows(void)
{
	int n = 0;
	mpk__ranges_each(t_count_windows_fn, &n);
	return n;
}

/* Whether [p, p+len) is inside a listed range of that kind. */
struct t_inside {
	uintptr_t lo, hi;
	int kind;
};
static int t_inside_fn(const struct t_range *r, void *arg)
{
	struct t_inside *q = arg;
	return r->kind == q->kind && r->lo <= q->lo && q->hi <= r->hi;
}
static inline int t_listed(const void *p, size_t len, int kind)
{
	struct t_inside q = { (uintptr_t)p, (uintptr_t)p + len, kind };
	return mpk__ranges_each(t_inside_fn, &q);
}

#endif
