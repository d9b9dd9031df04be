/* SPDX-License-Identifier: MIT */
/*
 * A spin lock for the code that runs beneath malloc (the drop-in's
 * internal allocator and debug table, the guard helper's block index):
 * a mutex there could allocate, or wait on a thread that is allocating;
 * this one needs nothing from libc but sched_yield(), and after fork()
 * only a store to reset it.  Waiters spin on a plain load, so the line is
 * not written until the lock looks free.
 */
#ifndef MPK_SHARED_SPIN_H
#define MPK_SHARED_SPIN_H

#include <sched.h>

static inline void mpk__spin_lock(volatile int *l)
{
	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(l, __ATOMIC_RELAXED))
			sched_yield();
}

static inline void mpk__spin_unlock(volatile int *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

#endif
