/* SPDX-License-Identifier: MIT */
/* mpk_lockdown()'s parts: the filter (lockdown_bpf.c), /proc/PID/mem
 * (landlock.c).  Not installed. */
#ifndef MPK_LOCKDOWN_H
#define MPK_LOCKDOWN_H

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MPK_BPF_MAX 4096 /* BPF_MAXINSNS */
/* Domain ranges the filter can hold: 22 instructions each (a range check
 * for others' calls, a containment check for mpkit's PROT_EXEC). */
#define MPK_LOCK_MAX_RANGES 150

#include "../core/core.h"

/* The filter for these ranges of domain memory (r) and of mpkit's gate
 * code (gate: denied like domain memory to all but mpkit's site, and not
 * code memory mpkit may make executable) into out (*len: room in, length
 * out); 0, or -1/E2BIG when it does not fit. */
int mpk__bpf_build(struct sock_filter *out, size_t *len, const struct mpk_range *r, size_t nr,
		   const struct mpk_range *gate, size_t ngate, uintptr_t trusted_ip,
		   unsigned flags); /* MPK_LOCK_* */

/* A filter to stack for a range of domain memory added after lockdown
 * (a new window): mprotect, munmap, madvise, mremap and mmap with
 * MAP_FIXED(_NOREPLACE) that touch [lo, hi) are denied unless made from
 * trusted_ip; everything else is left to the first filter. */
int mpk__bpf_build_range(struct sock_filter *out, size_t *len, uintptr_t lo, uintptr_t hi,
			 uintptr_t trusted_ip, unsigned flags);

/* Landlock: a ruleset under which this process's /proc/PID/mem and
 * /proc/PID/task/TID/mem cannot be opened, everything else can be read and
 * written as before.  Returns its fd, or -1 with errno (ENOTSUP: no
 * Landlock in this kernel). */
int mpk__landlock_proc_mem_ruleset(void);
int mpk__landlock_apply(int ruleset_fd);

#endif
