/* SPDX-License-Identifier: MIT */
#include "t_window.h"

static int t_count_windows_fn(const struct mpk_range *r, void *arg)
{
	if (r->kind == MPK_RANGE_WINDOW)
		++*(int *)arg;
	return 0;
}

int t_windows(void)
{
	int n = 0;
	mpk__ranges_each(t_count_windows_fn, &n);
	return n;
}

static int t_inside_fn(const struct mpk_range *r, void *arg)
{
	struct t_inside *q = arg;
	return r->kind == q->kind && r->lo <= q->lo && q->hi <= r->hi;
}

int t_listed(const void *p, size_t len, enum mpk_range_kind kind)
{
	struct t_inside q = { (uintptr_t)p, (uintptr_t)p + len, kind };
	return mpk__ranges_each(t_inside_fn, &q);
}
