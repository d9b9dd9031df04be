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

/* How many windows there are now. */
int t_windows(void);

/* Whether [p, p+len) is inside a listed range of that kind. */
struct t_inside {
	uintptr_t lo, hi;
	int kind;
};
int t_listed(const void *p, size_t len, int kind);

#endif
