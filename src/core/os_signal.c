/* SPDX-License-Identifier: MIT */
/*
 * Signal actions across the lockdown.  After mpk_lockdown() the filter
 * denies new actions for the signals a trap or a fault raises
 * (MPK_OS_FROZEN_SIGNALS) to everyone but mpkit's system-call site, so
 * mpkit's own handlers (the SIGSEGV fault handler, the watchpoints' SIGTRAP
 * handler) are installed from there: rt_sigaction with the C library's
 * sigreturn trampoline as restorer, learnt before the filter.  Before the
 * lockdown, libc's sigaction(), where sanitizers see it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../arch/arch.h"
#include "os.h"

#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000
#endif

/* The kernel's struct sigaction (x86-64): handler, flags, restorer, mask. */
struct ksigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

static void *restorer;          /* the C library's trampoline */
static void *installed[NSIG];   /* the handler mpkit last installed, per signal */

static int raw(int sig, const struct ksigaction *act, struct ksigaction *old)
{
	long r = mpk_arch_syscall6(SYS_rt_sigaction, sig, (long)act, (long)old, sizeof(act->mask), 0, 0);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return 0;
}

int mpk_os_sigaction_ready(void)
{
	struct ksigaction k;
	struct sigaction cur;

	if (restorer)
		return 0;
	/* libc puts its trampoline into every action it installs: SIGTRAP's
	 * own action, installed again through it, then read back raw. */
	if (sigaction(SIGTRAP, NULL, &cur) || sigaction(SIGTRAP, &cur, NULL) || raw(SIGTRAP, NULL, &k))
		return -1;
	if (!(k.flags & SA_RESTORER) || !k.restorer) {
		errno = ENOTSUP;
		return -1;
	}
	restorer = k.restorer;
	return 0;
}

int mpk_os_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	int rc;

	if (sig <= 0 || sig >= NSIG) {
		errno = EINVAL;
		return -1;
	}
	if (!mpk_os_is_locked() || !restorer) {
		rc = sigaction(sig, act, old);
	} else {
		struct ksigaction k, ko;
		if (act) {
			k.handler = (void *)act->sa_handler;
			k.flags = (unsigned long)act->sa_flags | SA_RESTORER;
			k.restorer = restorer;
			memcpy(&k.mask, &act->sa_mask, sizeof(k.mask));
		}
		rc = raw(sig, act ? &k : NULL, old ? &ko : NULL);
		if (!rc && old) {
			memset(old, 0, sizeof(*old));
			old->sa_handler = (void (*)(int))ko.handler;
			old->sa_flags = (int)ko.flags;
			old->sa_restorer = (void (*)(void))ko.restorer;
			memcpy(&old->sa_mask, &ko.mask, sizeof(ko.mask));
		}
	}
	if (!rc && act)
		__atomic_store_n(&installed[sig], (void *)act->sa_handler, __ATOMIC_RELEASE);
	return rc;
}

bool mpk_os_handler_is_ours(int sig, void (*handler)(int))
{
	return sig > 0 && sig < NSIG && handler != SIG_DFL && handler != SIG_IGN &&
	       __atomic_load_n(&installed[sig], __ATOMIC_ACQUIRE) == (void *)handler;
}

int mpk_os_signal_default(int sig)
{
	struct ksigaction k = { .handler = SIG_DFL };
	return raw(sig, &k, NULL);
}

pid_t mpk_os_tracer(void)
{
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	const char *t = strstr(buf, "\nTracerPid:");
	int pid;
	if (!t || sscanf(t, "\nTracerPid: %d", &pid) != 1) {
		errno = ENOENT;
		return -1;
	}
	return pid;
}
