/* SPDX-License-Identifier: MIT */
/*
 * What this kernel has.  A test's subject may be missing from a kernel
 * (its configuration, boot options, sysctls, security modules): each probe
 * says why, for the test to skip or to test what is there, or returns NULL.
 * Only "not on this kernel" answers count; any other failure is left for
 * the test to see.
 */
#ifndef MPK_TEST_KERNEL_H
#define MPK_TEST_KERNEL_H

#include "t.h"

#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/uio.h>

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif

/* What mpk_lockdown(flags) needs from the kernel, asked of the kernel
 * (not of mpkit, whose ENOTSUP a test must not take on trust): seccomp
 * filters (tried in a child) and, for MPK_LOCK_PROC_MEM, Landlock (not
 * built: ENOSYS, not enabled at boot: EOPNOTSUPP). */
const char *t_lockdown_absent(unsigned flags);

/* Skip a test of the lockdown itself where the kernel cannot lock. */
void t_need_lockdown(unsigned flags);

/* process_vm_readv() is there only with CONFIG_CROSS_MEMORY_ATTACH. */
const char *t_process_vm_absent(void);

#endif
