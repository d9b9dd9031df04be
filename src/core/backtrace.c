/* SPDX-License-Identifier: MIT */
/*
 * The backtrace of fault and misuse reports: the frames from the one
 * that matters (the program's caller of mpkit, or the faulting
 * instruction), as module+offset with what names dladdr() knows
 * (src/shared/trace.c); `mpkit symbolize` turns them into functions and
 * lines.  Async-signal-safe.
 */
#define _GNU_SOURCE
#include "internal.h"
#include "../shared/unwind.h"

#define MAX_FRAMES 48

void mpk__backtrace_print(struct mpk__text *t, uintptr_t ip)
{
	void *addrs[MAX_FRAMES];
	int n = mpk__bt(addrs, MAX_FRAMES);

	mpk__trace_format(t, addrs, n, ip, NULL);
}
