/* SPDX-License-Identifier: MIT */
/*
 * Helpers for heap and vault tests: a misuse handler that records instead
 * of aborting, a child whose stderr is captured (for reports), cookies, the
 * kernel's view of a mapping (smaps) and memory (RSS), and resource limits.
 * Public API and libc only.
 */
#ifndef MPK_TEST_HEAP_H
#define MPK_TEST_HEAP_H

#include <linux/capability.h>
#include <stdint.h>
#include <sys/resource.h>

#include "t_state.h"

/* ---- misuse, recorded ---- */

extern struct mpk_misuse t_misuse;
extern int t_misuses;

/* Record misuse from now on (the call then fails with EINVAL). */
void t_misuse_catch(void);

/* Exactly one misuse of this kind at addr was reported since the last
 * check. */
#define CHECK_MISUSE(kind_, addr_)                                            \
	do {                                                                  \
		if (t_misuses != 1 || t_misuse.kind != (kind_) ||              \
		    t_misuse.addr != (void *)(addr_))                          \
			t_fail("want one misuse %s at %p, got %d (kind %d at %p)", \
			       #kind_, (void *)(addr_), t_misuses, t_misuse.kind,   \
			       t_misuse.addr);                                  \
		t_misuses = 0;                                                \
	} while (0)

/* ---- overflows on purpose ---- */

/* memset() that sanitizers do not stop: a misuse test overflows a block
 * to see what the heap says of it (ASan builds report the write itself,
 * t_heap_asan_overflow checks that). */
#if defined(__SANITIZE_ADDRESS__)
__attribute__((no_sanitize_address))
#endif
void t_overflow(void *p, int c, size_t n);

/* Flip bits of a byte the same way (a header, say). */
#if defined(__SANITIZE_ADDRESS__)
__attribute__((no_sanitize_address))
#endif
void t_flip(void *p, unsigned char bits);

/* ---- cookies: a block says where it is and how long it is ---- */

uint64_t t_cookie(const void *p, size_t n);

/* Write the cookie at the start and the end of [p, p+n), n >= 16. */
void t_cookie_put(void *p, size_t n);

int t_cookie_ok(const void *p, size_t n);

/* ---- what the kernel says ---- */

/* Resident bytes of the process (/proc/self/statm). */
size_t t_rss(void);

/* The rest of the line starting with field (e.g. "VmFlags:") in the smaps
 * entry covering addr ("" if none). */
void t_smaps_field(const void *addr, const char *field, char *out, size_t size);

void t_vmflags(const void *addr, char *out, size_t size);

/* Locked kB of the mapping covering addr (-1: no such mapping). */
long t_locked_kb(const void *addr);

/* VmLck of this process, in KiB. */
long t_locked_kib(void);

/* Whether the VmFlags of addr's mapping include the two-letter flag. */
int t_vmflag(const void *addr, const char *flag);

/* Lower the soft limit (in a child); t_unlimit() puts back the hard one,
 * e.g. before forking a checker that needs memory (sanitizers do). */
void t_limit(int resource, rlim_t value);

void t_unlimit(int resource);

/* Pages of [p, p+len) resident now (unmapped ones are not). */
size_t t_resident(const void *p, size_t len);

/* Whether this process may lock memory beyond RLIMIT_MEMLOCK. */
int t_cap_ipc_lock(void);

/* Give up CAP_IPC_LOCK (root has it, and it ignores RLIMIT_MEMLOCK). */
void t_drop_ipc_lock(void);

/* Vault tests lock what their secrets take: skip where that much cannot be
 * locked (RLIMIT_MEMLOCK, not raisable, without CAP_IPC_LOCK). */
void t_need_memlock(size_t bytes);

/* Every heap call refuses h (not a heap, or a destroyed one): EINVAL. */
void t_heap_refused(mpk_heap *h);

/* The address space in use now, from /proc/self/statm (bytes). */
size_t t_vsize(void);

#endif
