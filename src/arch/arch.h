/* SPDX-License-Identifier: MIT */
/*
 * The arch interface: everything that depends on how a CPU implements keys.
 * The rest of mpkit sees an opaque per-thread rights register with a small
 * set of operations; x86 PKU is the first implementation.  Architectures
 * without keys get a stub that reports none, so the soft backend runs there.
 */
#ifndef MPK_ARCH_H
#define MPK_ARCH_H

#include <stdbool.h>
#include <stdint.h>

/* Facts the CPU reports about keys. */
struct mpk_arch_caps {
	bool cpu_keys;   /* the CPU implements keys */
	bool os_enabled; /* the kernel switched them on */
};
void mpk_arch_caps(struct mpk_arch_caps *caps);

#if defined(__x86_64__)
#include "x86/pkru.h"
#else
#include "none/pkru.h"
#endif

/*
 * Rights register image saved in a signal frame: the value sigreturn will
 * load into the interrupted thread.  Both return false when the frame has
 * no such image (then nothing was changed).
 */
bool mpk_arch_frame_reg_get(void *ucontext, mpk_reg_t *reg);
bool mpk_arch_frame_reg_set(void *ucontext, mpk_reg_t reg);

/*
 * If the frame interrupted an mpk_arch_reg_update() before its write, move
 * it back to the start of the update, so that it reads the register again
 * (with the frame's edited image) rather than write a stale value.
 */
void mpk_arch_frame_restart(void *ucontext);

/*
 * The signal frames a thread is nested in, innermost first: frames[0] is
 * ucontext (the frame of the signal now being handled), frames[1] the
 * frame of the handler that signal interrupted, if it interrupted one
 * (also in its restorer: the handler returned, its frame not yet loaded
 * back), and so on out to the frame whose sigreturn gives the thread's
 * own code its registers back.  Returns how many (1..max).  Frames of handlers that
 * block nothing more than what they interrupted (SA_NODEFER) cannot be
 * told from stale ones: they are listed too, and *own is the index of the
 * outermost frame known to be live (0: ucontext), so the thread's own code
 * gets back the register of one of frames[*own..n-1], the outermost of
 * those that are live.  Async-signal-safe.
 */
int mpk_arch_frame_chain(void *ucontext, void **frames, int max, int *own);
/* The same for the calling thread, outside any frame of its own: the
 * frames of the handlers it is running, innermost first (0 when it runs
 * none); *own -1 when none is known to be live (then its own code may hold
 * the register it has now).  sig: a signal whose handler came from the C
 * library (for the restorer address every frame starts with). */
int mpk_arch_self_frames(int sig, void **frames, int max, int *own);
/* mpkit's own system-call site (the lockdown filter trusts it): the raw
 * result, -errno on failure.  mpk_arch_syscall_ip is the address seccomp
 * reports for calls made there. */
long mpk_arch_syscall6(long nr, long a, long b, long c, long d, long e, long f);
extern const char mpk_arch_syscall_ip[];

/* Up to len bytes at addr of this process, read by the kernel (an
 * unreadable page ends the read instead of faulting): how many were read.
 * Async-signal-safe. */
size_t mpk_arch_self_read(void *buf, uintptr_t addr, size_t len);

/* Whether a SIGSEGV was raised by a write (from the page-fault error code). */
bool mpk_arch_fault_is_write(const void *ucontext);
/* Whether it was an instruction fetch. */
bool mpk_arch_fault_is_fetch(const void *ucontext);

/* The code the WRPKRU call gate relies on: [lo, hi) holds every checked
 * WRPKRU site with its check, and the failure path (empty without keys).
 * The lockdown keeps it mapped and executable: a fetch fault there would
 * stop a thread between a WRPKRU and its check. */
void mpk_arch_gate_span(uintptr_t *lo, uintptr_t *hi);

/* The calling thread's thread pointer (x86-64: TLS blocks below it, the
 * libc's thread descriptor from it upward); 0 where unknown. */
uintptr_t mpk_arch_thread_pointer(void);

/* Single-stepping the interrupted thread (watch.c): set or clear the trap
 * flag in the frame; the faulting instruction address. */
void mpk_arch_frame_step(void *ucontext, bool on);
void *mpk_arch_frame_ip(const void *ucontext);

#endif
