/* SPDX-License-Identifier: MIT */
#include "t_kernel.h"

/* A child's try at a seccomp filter: exits with its errno, 0 if it took. */
static void t_try_seccomp(void *arg)
{
	struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	struct sock_fprog prog = { 1, &allow };

	(void)arg;
	_exit(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	      syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) ? errno : 0);
}

const char *t_lockdown_absent(unsigned flags)
{
	struct t_child c = t_child(t_try_seccomp, NULL, 0);
	REQUIRE(!c.signal);
	int e = c.exit_code;
	if (e == EINVAL || e == ENOSYS)
		return "this kernel has no seccomp filters, which mpk_lockdown() needs";
	if ((flags & MPK_LOCK_PROC_MEM) &&
	    syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) < 1)
		return errno == EOPNOTSUPP ?
			"Landlock, which MPK_LOCK_PROC_MEM needs, is not enabled on this kernel (EOPNOTSUPP)" :
			"this kernel has no Landlock, which MPK_LOCK_PROC_MEM needs (ENOSYS)";
	return NULL;
}

void t_need_lockdown(unsigned flags)
{
	const char *why = t_lockdown_absent(flags);
	if (why)
		t_skip(why);
}

const char *t_process_vm_absent(void)
{
	char a = 1, b;
	struct iovec l = { &b, 1 }, r = { &a, 1 };

	if (syscall(SYS_process_vm_readv, getpid(), &l, 1, &r, 1, 0) < 0 && errno == ENOSYS)
		return "process_vm_readv is not in this kernel (ENOSYS: CONFIG_CROSS_MEMORY_ATTACH off)";
	return NULL;
}
