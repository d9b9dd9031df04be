/* SPDX-License-Identifier: MIT */
/* The window tests: internal window calls (libmpkit.a; testing.h, and
 * core.h for the ranges), and helpers over them. */
#ifndef T_WINDOW_H
#define T_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

#include "t_state.h"
#include "../src/core/core.h"
#include "../src/core/testing.h"

/* How many windows there are now. */
int t_windows(void);

/* Whether [p, p+len) is inside a listed range of that kind. */
struct t_inside {
	uintptr_t lo, hi;
	enum mpk_range_kind kind;
};
int t_listed(const void *p, size_t len, enum mpk_range_kind kind);

#endif
