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
static inline const char *t_lockdown_absent(unsigned flags)
{
	struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	struct sock_fprog prog = { 1, &allow };
	int status;

	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
		      syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) ? errno : 0);
	REQUIRE(waitpid(pid, &status, 0) == pid && WIFEXITED(status));
	int e = WEXITSTATUS(status);
	if (e == EINVAL || e == ENOSYS)
		return "this kernel has no seccomp filters, which mpk_lockdown() needs";
	if ((flags & MPK_LOCK_PROC_MEM) &&
	    syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) < 1)
		return errno == EOPNOTSUPP ?
			"Landlock, which MPK_LOCK_PROC_MEM needs, is not enabled on this kernel (EOPNOTSUPP)" :
			"this kernel has no Landlock, which MPK_LOCK_PROC_MEM needs (ENOSYS)";
	return NULL;
}

/* Skip a test of the lockdown itself where the kernel cannot lock. */
static inline void t_need_lockdown(unsigned flags)
{
	const char *why = t_lockdown_absent(flags);
	if (why)
		t_skip(why);
}

/* process_vm_readv() is there only with CONFIG_CROSS_MEMORY_ATTACH. */
static inline const char *t_process_vm_absent(void)
{
	char a = 1, b;
	struct iovec l = { &b, 1 }, r = { &a, 1 };

	if (syscall(SYS_process_vm_readv, getpid(), &l, 1, &r, 1, 0) < 0 && errno == ENOSYS)
		return "process_vm_readv is not in this kernel (ENOSYS: CONFIG_CROSS_MEMORY_ATTACH off)";
	return NULL;
}

#endif
