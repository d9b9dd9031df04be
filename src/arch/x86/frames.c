/* SPDX-License-Identifier: MIT */
/*
 * x86-64: the signal frames a thread is nested in.  A thread interrupted
 * inside a signal handler has two PKRU images that matter: the handler's
 * (in the frame of the signal that interrupted it) and the one its own code
 * gets back when the handler returns (in the handler's frame, further up
 * its stack).  The kernel does not link frames, so the outer one is found
 * on the stack: the rt_sigframe Linux pushes starts with the restorer
 * address (the same for every handler glibc or musl installs, and for
 * mpkit's own), then the ucontext, then the siginfo (written only for
 * SA_SIGINFO handlers), with the XSAVE image just above, marked by two
 * magic words.  Every read goes through
 * process_vm_readv(), so a scan that runs off the stack stops there instead
 * of faulting; it is made at mpkit's own system-call site, which the
 * lockdown filter lets through (it denies the call to everyone else).
 * Async-signal-safe.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#include "../../arch.h"

#define UC_SIZE          304 /* the kernel's struct ucontext on x86-64 */
#define FRAME_SIZE       (8 + UC_SIZE + 128) /* pretcode, ucontext, siginfo */
#define UC_FP_XSTATE     1
#define XSTATE_MAGIC1    0x46505853u
#define XSTATE_MAGIC2    0x46505845u
#define SW_BYTES_OFFSET  464
#define SCAN_MAX         (128 * 1024) /* a handler using more is not found */
#define CHUNK            1024

/* Exactly len bytes at addr, or false (unmapped or unreadable). */
static ssize_t self_read(void *buf, uintptr_t addr, size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)addr, len };
	return mpk_arch_syscall6(SYS_process_vm_readv, getpid(), (long)&l, 1, (long)&r, 1, 0);
}

static bool peek(uintptr_t addr, void *buf, size_t len)
{
	return self_read(buf, addr, len) == (ssize_t)len;
}

/* Whether p is a live rt_sigframe that restorer returns from. */
static bool frame_at(uintptr_t p, uintptr_t restorer)
{
	struct {
		uintptr_t pretcode;
		unsigned char uc[UC_SIZE];
	} f;
	uint32_t sw[6], magic2;
	unsigned long flags;
	uintptr_t fp;

	if (!peek(p, &f, sizeof(f)) || f.pretcode != restorer)
		return false;
	/* The fields glibc's ucontext_t shares with the kernel's. */
	memcpy(&flags, f.uc + offsetof(ucontext_t, uc_flags), sizeof(flags));
	memcpy(&fp, f.uc + offsetof(ucontext_t, uc_mcontext.fpregs), sizeof(fp));
	if (!(flags & UC_FP_XSTATE))
		return false;
	/* The kernel puts the frame right under the 64-byte aligned image. */
	if (fp & 63 || fp < p + FRAME_SIZE || fp - (p + FRAME_SIZE) >= 64)
		return false;
	if (!peek(fp + SW_BYTES_OFFSET, sw, sizeof(sw)) || sw[0] != XSTATE_MAGIC1)
		return false;
	uint32_t xstate_size = sw[4];
	if (xstate_size < 576 || xstate_size > 64 * 1024 || sw[1] != xstate_size + 4)
		return false;
	return peek(fp + xstate_size, &magic2, 4) && magic2 == XSTATE_MAGIC2;
}

/* The kernel's 64-bit signal mask saved in a frame. */
static uint64_t mask_of(const ucontext_t *uc)
{
	uint64_t m;
	memcpy(&m, &uc->uc_sigmask, sizeof(m));
	return m;
}

/*
 * The frame whose handler the context in inner was running, or NULL.  A
 * stale frame left in dead stack memory (a handler that returned) looks
 * the same; what tells it apart is the signal mask: a running handler
 * blocks what the context it interrupted blocked, and at least its own
 * signal more.  (A handler installed with SA_NODEFER and an empty sa_mask
 * is therefore not found.)
 */
static ucontext_t *outer(const ucontext_t *inner, uintptr_t restorer)
{
	uintptr_t start = (uintptr_t)inner->uc_mcontext.gregs[REG_RSP];
	uintptr_t buf[CHUNK / sizeof(uintptr_t)];
	uint64_t in_mask = mask_of(inner);

	if (!in_mask) /* the common case, and no scan: see above */
		return NULL;
	/* Frames start 8 bytes past a 16-byte boundary, the first perhaps at
	 * start itself: a handler interrupted at its first instruction has
	 * its frame right at its stack pointer. */
	start &= ~(uintptr_t)15;
	for (uintptr_t a = start; a - start < SCAN_MAX; a += CHUNK) {
		ssize_t got = self_read(buf, a, CHUNK);
		if (got <= 0)
			return NULL;
		for (size_t i = 1; i < (size_t)got / sizeof(uintptr_t); i += 2) {
			uintptr_t p = a + i * sizeof(uintptr_t);
			if (buf[i] != restorer || !frame_at(p, restorer))
				continue;
			ucontext_t *uc = (ucontext_t *)(p + 8);
			uint64_t m = mask_of(uc);
			if ((in_mask & ~m) && !(m & ~in_mask))
				return uc;
		}
		if (got < CHUNK)
			return NULL;
	}
	return NULL;
}

int mpk_arch_frame_chain(void *ucontext, void **frames, int max)
{
	ucontext_t *uc = ucontext;
	/* The handler that got ucontext returns to the restorer too. */
	uintptr_t restorer = ((const uintptr_t *)ucontext)[-1];
	int n = 0;

	frames[n++] = uc;
	while (n < max && (uc = outer(uc, restorer)))
		frames[n++] = uc;
	return n;
}

int mpk_arch_self_frames(int sig, void **frames, int max)
{
	struct {
		void *handler;
		unsigned long flags;
		uintptr_t restorer;
		uint64_t mask;
	} k;
	ucontext_t here, *uc = &here;
	int n = 0;

	if (syscall(SYS_rt_sigaction, sig, NULL, &k, sizeof(k.mask)) || !k.restorer)
		return 0;
	/* A context standing for the caller: where its stack is, what it
	 * blocks. */
	here.uc_mcontext.gregs[REG_RSP] = (greg_t)(uintptr_t)__builtin_frame_address(0);
	if (pthread_sigmask(SIG_BLOCK, NULL, &here.uc_sigmask))
		return 0;
	while (n < max && (uc = outer(uc, k.restorer)))
		frames[n++] = uc;
	return n;
}
