/* SPDX-License-Identifier: MIT */
/*
 * The gate every patched export of a guarded library goes through
 * (docs/guard.md, "The gate"): rights to the domain of the function's
 * library for the calling thread on the way in, the rights held before
 * on the way out; the other libraries' domains stay as they were.
 * The caller's return address is kept on a per-thread shadow stack, not
 * on the stack, so that the callee finds its arguments (stack ones,
 * variadic ones) exactly where the caller put them.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "guard.h"

/* Nesting deeper than this aborts (the return address would be lost):
 * 24 KiB of TLS a thread.  A growable stack is for later. */
#define GUARD_DEPTH 1024

struct guard_frame {
	void *ret;   /* the caller's return address */
	void **slot; /* where it was on the stack: a longjmp past it left the gate */
	int prev;    /* the rights held before the gate, to fn's library's domain */
	struct guard_fn *fn; /* its lib says which domain the gate opened */
};

/* GUARD_TLS (guard.h): no __tls_get_addr() call can reach the allocator
 * from the gate.  The
 * frames are mapped at a thread's first call, not in TLS: glibc keeps
 * a few hundred bytes of static TLS for a library opened by dlopen()
 * (mpk_guard_library()), and refuses one that wants more. */
static GUARD_TLS struct guard_frame *frames;
static GUARD_TLS unsigned depth;
/* MPKIT_GUARD_STATS (guard_stats.c): calls through the gate, and those
 * that opened the domain, per library. */
GUARD_TLS unsigned long guard_calls[GUARD_LIBS], guard_opens[GUARD_LIBS];

static void guard_die(const char *what)
{
	static const char msg[] = "mpkit guard: the gate could not change rights: ";
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0 || write(STDERR_FILENO, what, 5) < 0)
		abort();
	abort();
}

static pthread_key_t frames_key;
static pthread_once_t frames_once = PTHREAD_ONCE_INIT;

/* Run in the thread that ends; a later call (another key's destructor)
 * maps them again. */
static void frames_free(void *f)
{
	frames = NULL;
	munmap(f, GUARD_DEPTH * sizeof(*frames));
}

static void frames_key_make(void)
{
	if (pthread_key_create(&frames_key, frames_free))
		abort();
}

/* The thread's frames, mapped at its first call (a system call and
 * pthread_setspecific(), which allocates nothing for the first keys),
 * unmapped at its end. */
static void frames_map(void)
{
	void *f = mmap(NULL, GUARD_DEPTH * sizeof(*frames), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		       0);

	if (f == MAP_FAILED || pthread_once(&frames_once, frames_key_make) || pthread_setspecific(frames_key, f))
		guard_die("map  ");
	frames = f;
}

/* From the gate, with the arguments saved: open, remember, go on to the
 * function's own code. */
__attribute__((used)) void *guard_enter(struct guard_fn *fn, void **slot)
{
	int err = errno;

	if (__builtin_expect(!frames, 0))
		frames_map();
	unsigned d = depth;
	struct guard_lib *l = fn->lib;
	int prev = mpk_get(l->domain);

	if (d >= GUARD_DEPTH)
		abort();
	/* The frame whole before it counts: a signal handler on this thread
	 * reads the frames below depth (guard_inside()). */
	frames[d] = (struct guard_frame){ *slot, slot, prev, fn };
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	depth = d + 1;
	/* A thread's first call: its counts are to be kept at its end. */
	if (!guard_calls[l->index]++ && guard_stats_on)
		guard_stats_thread();
	/* Nothing to change on re-entry (recursion, a callback that calls
	 * back in): no WRPKRU, no mprotect. */
	if (prev != MPK_RW) {
		guard_opens[l->index]++;
		if (mpk_set(l->domain, MPK_RW))
			guard_die("enter");
	}
	errno = err;
	return fn->rest;
}

/* From the gate, with the return values saved: the rights of before,
 * and where to return to. */
__attribute__((used)) void *guard_leave(void)
{
	int err = errno;
	struct guard_frame *f = &frames[--depth];

	if (f->prev != MPK_RW && mpk_set(f->fn->lib->domain, f->prev))
		guard_die("leave");
	errno = err;
	return f->ret;
}

/* Whether the calling thread is inside a gate into the library whose
 * domain is d (async-signal-safe: guard_report.c's fault callback). */
int guard_inside(const mpk_domain *d)
{
	for (unsigned k = depth; k > 0; k--)
		if (frames[k - 1].fn->lib->domain == d)
			return 1;
	return 0;
}

/* Inside a gate: where the innermost one's callee returns to (the
 * return address it put in the caller's slot), else NULL
 * (guard_heap.c: whose code is allocating). */
void *guard_inner_return(void)
{
	return depth ? *frames[depth - 1].slot : NULL;
}

const struct guard_fn *guard_inner_fn(void)
{
	return depth ? frames[depth - 1].fn : NULL;
}

const struct guard_fn *guard_entry_fn(const struct guard_lib *l)
{
	for (unsigned d = depth; d > 0; d--) {
		const struct guard_fn *fn = frames[d - 1].fn;
		uintptr_t ret = (uintptr_t)frames[d - 1].ret;
		if (fn->lib == l && (ret < l->text_lo || ret >= l->text_hi))
			return fn;
	}
	return NULL;
}

/* A longjmp to a stack pointer sp (guard_wrap.c) leaves every gate
 * whose return slot lies below sp (the stack grows down): their entries
 * go, and each domain they opened gets back the rights held before the
 * outermost of them that opened it (innermost first: the outermost's
 * are set last). */
void guard_unwind(uintptr_t sp)
{
	int err = errno;
	unsigned d = depth;

	while (d > 0 && (uintptr_t)frames[d - 1].slot < sp)
		d--;
	for (unsigned k = depth; k > d; k--) {
		const struct guard_frame *f = &frames[k - 1];
		mpk_domain *dom = f->fn->lib->domain;
		if (mpk_get(dom) != f->prev && mpk_set(dom, f->prev))
			guard_die("jump ");
	}
	depth = d;
	errno = err;
}

/* %r11: the function's struct guard_fn (from its stub).  At entry the
 * stack is the caller's call: 8 mod 16, the return address on top.
 * Saved: the argument registers and %rax (a variadic call's count of
 * vector arguments), %xmm0-7; on return %rax, %rdx, %xmm0-1 (x87 st0
 * is untouched: the C above does no x87 arithmetic).
 * Its CFI says where the caller's return address is until the callee's
 * takes its slot; from the call on it is on the shadow stack, which no
 * unwind rule can read: "undefined", and guard_personality
 * (guard_unwind.c) takes an exception or forced unwind that reaches the
 * gate and carries it on past (docs/guard.md, "Unwinding"). */
__asm__(".text\n"
	".globl guard_gate\n"
	".hidden guard_gate\n"
	".type guard_gate, @function\n"
	"guard_gate:\n"
	"	.cfi_startproc\n"
	"	.cfi_personality 0x1b, guard_personality\n" /* pc-relative, 4 bytes: hidden, in this object's reach */
	"	push %rdi; .cfi_adjust_cfa_offset 8; push %rsi; .cfi_adjust_cfa_offset 8\n"
	"	push %rdx; .cfi_adjust_cfa_offset 8; push %rcx; .cfi_adjust_cfa_offset 8\n"
	"	push %r8; .cfi_adjust_cfa_offset 8; push %r9; .cfi_adjust_cfa_offset 8\n"
	"	push %rax; .cfi_adjust_cfa_offset 8; push %r11; .cfi_adjust_cfa_offset 8\n"
	"	sub $136, %rsp; .cfi_adjust_cfa_offset 136\n"
	"	movdqu %xmm0, 0(%rsp); movdqu %xmm1, 16(%rsp); movdqu %xmm2, 32(%rsp); movdqu %xmm3, 48(%rsp)\n"
	"	movdqu %xmm4, 64(%rsp); movdqu %xmm5, 80(%rsp); movdqu %xmm6, 96(%rsp); movdqu %xmm7, 112(%rsp)\n"
	"	mov %r11, %rdi\n"
	"	lea 200(%rsp), %rsi\n" /* the return address's slot */
	"	call guard_enter\n"
	"	mov %rax, %r11\n"
	"	movdqu 0(%rsp), %xmm0; movdqu 16(%rsp), %xmm1; movdqu 32(%rsp), %xmm2; movdqu 48(%rsp), %xmm3\n"
	"	movdqu 64(%rsp), %xmm4; movdqu 80(%rsp), %xmm5; movdqu 96(%rsp), %xmm6; movdqu 112(%rsp), %xmm7\n"
	"	add $144, %rsp; .cfi_adjust_cfa_offset -144\n"
	"	pop %rax; .cfi_adjust_cfa_offset -8; pop %r9; .cfi_adjust_cfa_offset -8\n"
	"	pop %r8; .cfi_adjust_cfa_offset -8; pop %rcx; .cfi_adjust_cfa_offset -8\n"
	"	pop %rdx; .cfi_adjust_cfa_offset -8; pop %rsi; .cfi_adjust_cfa_offset -8\n"
	"	pop %rdi; .cfi_adjust_cfa_offset -8\n"
	"	add $8, %rsp; .cfi_adjust_cfa_offset -8\n" /* the callee's return address goes in its place */
	"	.cfi_undefined rip\n"
	"	call *%r11\n"
	".globl guard_gate_back\n"
	".hidden guard_gate_back\n"
	"guard_gate_back:\n"
	"	push %rax; .cfi_adjust_cfa_offset 8; push %rdx; .cfi_adjust_cfa_offset 8\n"
	"	sub $32, %rsp; .cfi_adjust_cfa_offset 32\n"
	"	movdqu %xmm0, 0(%rsp); movdqu %xmm1, 16(%rsp)\n"
	"	call guard_leave\n"
	"	mov %rax, %r11\n"
	"	movdqu 0(%rsp), %xmm0; movdqu 16(%rsp), %xmm1\n"
	"	add $32, %rsp; .cfi_adjust_cfa_offset -32\n"
	"	pop %rdx; .cfi_adjust_cfa_offset -8; pop %rax; .cfi_adjust_cfa_offset -8\n"
	"	jmp *%r11\n"
	"	.cfi_endproc\n"
	".size guard_gate, .-guard_gate\n");
