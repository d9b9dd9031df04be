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

/* Executable memory at lockdown (lockdown_exec.c): every range, for the
 * filter to keep mremap() off it (two instructions each), and those
 * copied out of a file the process can write, kept from madvise() (a
 * range check each). */
#define MPK_LOCK_MAX_EXEC 256
#define MPK_LOCK_MAX_COPIED 32
/* mpkit's system-call site and those of other mpkits in the process. */
#define MPK_LOCK_MAX_SITES 4
struct mpk_exec_ranges {
	struct mpk_range x[MPK_LOCK_MAX_EXEC];
	size_t nx;
	struct mpk_range copied[MPK_LOCK_MAX_COPIED];
	size_t ncopied;
};

/* Reads /proc/self/maps (outside dom, the domain ranges) into e, copies
 * out what needs it; 0, or -1/errno: EBUSY (refused: READ_IMPLIES_EXEC,
 * a writable and executable mapping, code a write could still change;
 * said on stderr), E2BIG (too many ranges), or mprotect's. */
int mpk__exec_ranges(struct mpk_exec_ranges *e, const struct mpk_range *dom, size_t ndom, unsigned flags);

/* The filter for these ranges of domain memory (r) and of mpkit's gate
 * code (gate: denied like domain memory to all but mpkit's site, and not
 * code memory mpkit may make executable), and the executable memory ex
 * (NULL: none) into out (*len: room in, length out); 0, or -1/E2BIG when
 * it does not fit. */
int mpk__bpf_build(struct sock_filter *out, size_t *len, const struct mpk_range *r, size_t nr,
		   const struct mpk_range *gate, size_t ngate, const struct mpk_exec_ranges *ex,
		   const uintptr_t *trusted, size_t ntrusted, unsigned flags); /* MPK_LOCK_* */

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
