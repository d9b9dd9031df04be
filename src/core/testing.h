/* SPDX-License-Identifier: MIT */
/*
 * The core's calls that tests (tests/) and benchmarks (bench/scale.c,
 * bench/bcast.c) make into its internals: hidden in libmpkit.so, reached
 * by linking libmpkit.a.  One declaration each, which the files that
 * define them include, so that the compiler holds every caller to the
 * definition; tests/check-layers.sh fails on a prototype of an mpk__ call
 * written by hand in tests/ or bench/, and lets bench/ include this one
 * header of the core's.  Only mpkit.h's and arch.h's types here.  Not
 * installed.
 */
#ifndef MPK_TESTING_H
#define MPK_TESTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mpkit.h"
#include "../arch/arch.h"

/* os.c: fault injection.  The nth next call of kind (1: the very next)
 * fails with err, once; -1: every call fails until disarmed; 0 disarms. */
enum { MPK_OS_FAIL_MPROTECT = 0, MPK_OS_FAIL_PKEY_ALLOC = 1 };
void mpk__test_fail(int kind, int nth, int err);

/* window.c: the address range of a window unit, reserved but not mapped
 * (tests and the benchmark register many regions without spending VMAs:
 * the kernel's vm.max_map_count is 65530 by default); _uncarve gives it
 * back.  owned.c carves too (a region that moves). */
void *mpk__window_carve(size_t len, size_t align);
void mpk__window_uncarve(void *p, size_t len);
/* region.c: make [p, p+len) (carved, not mapped) a region of d (add) or
 * stop it being one, under mpk_g.lock.  0 or -1/errno. */
int mpk__region_register(mpk_domain *d, void *p, size_t len, bool add);

/* window.c: bytes mapped in the windows now.  RLIMIT_AS counts the
 * reservations whole and never what is mapped inside them, so tests that
 * run out of domain memory cap it with _test_cap (0: no cap). */
size_t mpk__window_mapped(void);
void mpk__window_test_cap(size_t bytes);
/* Window index of addr (0 .. MPK_WINDOW_MAX-1), or -1.  Signal-safe. */
int mpk__window_of(uintptr_t addr);
/* Bumped (release) each time a window or an adopted range is added or an
 * adopted range removed: a filter built from mpk__ranges_each() is current
 * while this has not changed.  Signal-safe. */
uint64_t mpk__ranges_gen(void);

/* broadcast.c: apply reg = (reg & ~clear) | set in every thread, by
 * signalling each with MPK_SIGNAL (core.h); 0 or -1/errno. */
int mpk__broadcast(mpk_reg_t clear, mpk_reg_t set);
/* Benchmarks on machines without keys: run the protocol on any backend,
 * the frame edit replaced by a no-op (on 1, off 0). */
void mpk__broadcast_stub(int on);
/* Signals sent, system calls made by broadcasting threads, /proc scans. */
void mpk__broadcast_counters(uint64_t c[3]);
/* Of those system calls, the ones slow answers cost: waits that timed out
 * and the looks at late threads after them (scheduling, not protocol). */
uint64_t mpk__broadcast_slow_syscalls(void);
/* Threads left alone because they held the target rights already; with
 * noskip on, every thread is signalled. */
uint64_t mpk__broadcast_skipped(void);
void mpk__broadcast_noskip(int on);

#endif
