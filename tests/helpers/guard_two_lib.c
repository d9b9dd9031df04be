/* SPDX-License-Identifier: MIT */
/*
 * libguardtwo.so, the second library t_guard_multi guards next to
 * libguardtest.so, which it links and calls: g2_call() calls g_add()
 * (a call from one guarded library into the other), g2_back() has
 * libguardtest's g_apply() call back into this library's own code,
 * which writes this library's state (its domain stays open while the
 * other runs), g2_poke() writes where it is told: into
 * libguardtest's state, a stray write from this library's code, and
 * g2_via() passes the program's callback on to g_apply(): the callback
 * runs inside both libraries' gates; g2_block() allocates a block with
 * its own code (its name says nothing of allocating: under --heap the
 * block is this library's).
 */
#include <stdlib.h>

#include "guard_lib.h"
#include "guard_two_lib.h"

/* A page of its own (in .data): covered with either C library. */
static struct {
	long count;
	char rest[4096 - sizeof(long)];
} two_state __attribute__((section(".data"), aligned(4096)));

long g2_add(long by)
{
	two_state.count += by;
	return two_state.count;
}

long *g2_ptr(void)
{
	return &two_state.count;
}

long g2_call(long by)
{
	two_state.count++;
	return g_add(by) * 1000 + two_state.count;
}

/* Reached from libguardtest's code through a pointer: no gate. */
static long bump(long v)
{
	two_state.count += v;
	return two_state.count;
}

long g2_back(long by)
{
	return g_apply(bump, by);
}

/* Counted, so that it is long enough to patch: it runs inside its gate. */
void g2_poke(long *p, long v)
{
	two_state.count++;
	*(volatile long *)p = v;
}

long g2_via(long (*fn)(long), long v)
{
	two_state.count++;
	return g_apply(fn, v);
}

long *g2_block(void)
{
	long *p = malloc(64);

	if (p)
		*p = ++two_state.count;
	return p;
}
