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
 * lockdown filter lets through (it denies the call to everyone else).  A
 * scan ends where the stack does at the latest (walk_from()).
 * Async-signal-safe.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#include "../arch.h"

#define UC_SIZE          304 /* the kernel's struct ucontext on x86-64 */
#define FRAME_SIZE       (8 + UC_SIZE + 128) /* pretcode, ucontext, siginfo */
#define UC_FP_XSTATE     1
#define XSTATE_MAGIC1    0x46505853u
#define XSTATE_MAGIC2    0x46505845u
#define SW_BYTES_OFFSET  464
#define SCAN_MAX         (128 * 1024) /* a handler using more is not found */
#define CHUNK            1024

/* Up to len bytes at addr of process pid (this one): how many could be
 * read before an unmapped or unreadable page. */
static ssize_t self_read(pid_t pid, void *buf, uintptr_t addr, size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)addr, len };
	return mpk_arch_syscall6(SYS_process_vm_readv, pid, (long)&l, 1, (long)&r, 1, 0);
}

size_t mpk_arch_self_read(void *buf, uintptr_t addr, size_t len)
{
	ssize_t n = self_read(getpid(), buf, addr, len);
	return n > 0 ? (size_t)n : 0;
}

static bool peek(pid_t pid, uintptr_t addr, void *buf, size_t len)
{
	return self_read(pid, buf, addr, len) == (ssize_t)len;
}

/* Whether p is a live rt_sigframe that restorer returns from. */
static bool frame_at(pid_t pid, uintptr_t p, uintptr_t restorer)
{
	struct {
		uintptr_t pretcode;
		unsigned char uc[UC_SIZE];
	} f;
	uint32_t sw[6], magic2;
	unsigned long flags;
	uintptr_t fp;

	if (!peek(pid, p, &f, sizeof(f)) || f.pretcode != restorer)
		return false;
	/* The fields glibc's ucontext_t shares with the kernel's. */
	memcpy(&flags, f.uc + offsetof(ucontext_t, uc_flags), sizeof(flags));
	memcpy(&fp, f.uc + offsetof(ucontext_t, uc_mcontext.fpregs), sizeof(fp));
	if (!(flags & UC_FP_XSTATE))
		return false;
	/* The kernel puts the frame right under the 64-byte aligned image. */
	if (fp & 63 || fp < p + FRAME_SIZE || fp - (p + FRAME_SIZE) >= 64)
		return false;
	if (!peek(pid, fp + SW_BYTES_OFFSET, sw, sizeof(sw)) || sw[0] != XSTATE_MAGIC1)
		return false;
	uint32_t xstate_size = sw[4];
	if (xstate_size < 576 || xstate_size > 64 * 1024 || sw[1] != xstate_size + 4)
		return false;
	return peek(pid, fp + xstate_size, &magic2, 4) && magic2 == XSTATE_MAGIC2;
}

/* The kernel's 64-bit signal mask saved in a frame. */
static uint64_t mask_of(const ucontext_t *uc)
{
	uint64_t m;
	memcpy(&m, &uc->uc_sigmask, sizeof(m));
	return m;
}

/* The kernel's struct sigaction on x86-64, as rt_sigaction() reads it. */
struct k_sigaction {
	uintptr_t handler;
	unsigned long flags;
	uintptr_t restorer;
	uint64_t mask;
};
#define K_SA_NODEFER 0x40000000ul

/*
 * Whether some handler, as installed now, runs with the very mask m of the
 * context it interrupted: SA_NODEFER (its own signal is not added) and an
 * sa_mask that adds nothing to m.  Only such a handler's frame has the
 * same mask as the context it interrupted.
 */
static bool nodefer_handler(uint64_t m)
{
	struct k_sigaction k;

	for (long sig = 1; sig <= 64; sig++)
		if (!syscall(SYS_rt_sigaction, sig, NULL, &k, sizeof(k.mask)) &&
		    k.handler > 1 /* not SIG_DFL, SIG_IGN */ && (k.flags & K_SA_NODEFER) &&
		    !(k.mask & ~m))
			return true;
	return false;
}

/*
 * A walk out through a thread's frames: where to look next (at or above
 * start, below end, for frames whose mask is at most mask), and what
 * nodefer_handler() said for mask (-1: not asked yet).
 */
struct walk {
	pid_t pid;
	uintptr_t restorer, start, end;
	uint64_t mask;
	int nodefer;
};

/*
 * Where the stack of a context whose stack pointer is start ends, at the
 * latest: on the alternate signal stack (the context's uc_stack says so),
 * its top; else the thread pointer (glibc and musl put a thread's control
 * block and TLS right above its stack) or, for the main thread, the
 * program's file name (the kernel writes it at the top of the first
 * stack), whichever is the nearest above start; SCAN_MAX above it at most.
 * A frame of a handler of the thread lies below.
 */
static void walk_from(struct walk *w, uintptr_t start, const stack_t *alt)
{
	static uintptr_t fn; /* atomic: any thread may set it, to the same value */
	uintptr_t end = start + SCAN_MAX, tp, top, execfn = __atomic_load_n(&fn, __ATOMIC_RELAXED);

	if (!execfn)
		__atomic_store_n(&fn, execfn = (uintptr_t)getauxval(AT_EXECFN), __ATOMIC_RELAXED);
	__asm__("movq %%fs:0, %0" : "=r"(tp)); /* the thread pointer: its TCB's first word */
	w->start = start;
	if (alt && (alt->ss_flags & SS_ONSTACK)) {
		top = (uintptr_t)alt->ss_sp + alt->ss_size;
		if (top > start && top < end)
			end = top;
	}
	if (tp > start && tp < end)
		end = tp;
	if (execfn > start && execfn < end)
		end = execfn;
	w->end = end;
}

/*
 * The next frame of a handler that may be running, or NULL.  A stale frame
 * left in dead stack memory (a handler that returned) looks the same; what
 * tells it apart is the signal mask: a running handler blocks what the
 * context it interrupted blocked, and in most cases more (at least its own
 * signal): then the frame is certain, *maybe false.  A frame with the same
 * mask may be a running SA_NODEFER handler's or a stale one: when some
 * handler is installed so (nodefer_handler), it is returned with *maybe
 * true, and the caller cannot know whether it is live.  The walk goes on
 * from the context the frame saved either way: from a stale frame, that
 * is a little above it, or (a frame on the alternate stack) on the stack
 * where it was taken.
 */
static ucontext_t *outer(struct walk *w, bool *maybe)
{
	uintptr_t buf[CHUNK / sizeof(uintptr_t)];
	/* Frames start 8 bytes past a 16-byte boundary; the first may be at
	 * start itself (a handler interrupted at its first instruction has
	 * its frame right at its stack pointer). */
	uintptr_t base = w->start & ~(uintptr_t)15;

	for (uintptr_t a = base; a < w->end; a += CHUNK) {
		size_t len = w->end - a < CHUNK ? w->end - a : CHUNK;
		ssize_t got = self_read(w->pid, buf, a, len);
		if (got <= 0)
			return NULL;
		for (size_t i = 1; i < (size_t)got / sizeof(uintptr_t); i += 2) {
			uintptr_t p = a + i * sizeof(uintptr_t);
			if (p < w->start || buf[i] != w->restorer || !frame_at(w->pid, p, w->restorer))
				continue;
			ucontext_t *uc = (ucontext_t *)(p + 8);
			uint64_t m = mask_of(uc);
			if (m & ~w->mask)
				continue; /* blocks what the inner context did not */
			*maybe = m == w->mask;
			if (*maybe) {
				if (w->nodefer < 0)
					w->nodefer = nodefer_handler(w->mask);
				if (!w->nodefer)
					continue;
			} else {
				w->mask = m;
				w->nodefer = -1;
			}
			walk_from(w, (uintptr_t)uc->uc_mcontext.gregs[REG_RSP], &uc->uc_stack);
			return uc;
		}
		if ((size_t)got < len)
			return NULL;
	}
	return NULL;
}

/* Frames out from w into frames[n..max); *own: see arch.h.  A frame found
 * twice (a stale one on an alternate stack above the stack it names) ends
 * the walk. */
static int walk_out(struct walk *w, void **frames, int n, int max, int *own)
{
	ucontext_t *uc;
	bool maybe;

	while (n < max && (uc = outer(w, &maybe))) {
		for (int j = 0; j < n; j++)
			if (frames[j] == uc)
				return n;
		if (!maybe)
			*own = n;
		frames[n++] = uc;
	}
	return n;
}

/*
 * A context interrupted in the restorer (the handler's ret has popped the
 * frame's first word, the rt_sigreturn system call is yet to run): the
 * frame that sigreturn will load starts 8 bytes below the stack pointer,
 * where no scan from that stack pointer looks.  Kept intact there: the
 * kernel leaves the 128-byte red zone below the stack pointer alone when
 * it pushes the frame of the signal that interrupted it.  The frame is
 * live whatever its signal mask says (a SA_NODEFER handler's is the same
 * as its context's): the thread is about to return into it.  NULL if the
 * context is not in the restorer (its two instructions, mov and syscall).
 */
#define RESTORER_LEN 16

static ucontext_t *returning(struct walk *w, const ucontext_t *uc)
{
	uintptr_t ip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	uintptr_t p = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP] - 8;

	if (ip - w->restorer >= RESTORER_LEN || !frame_at(w->pid, p, w->restorer))
		return NULL;
	return (ucontext_t *)(p + 8);
}

int mpk_arch_frame_chain(void *ucontext, void **frames, int max, int *own)
{
	ucontext_t *uc = ucontext, *ret;
	/* The handler that got ucontext returns to the restorer too. */
	struct walk w = { .pid = getpid(), .restorer = ((const uintptr_t *)ucontext)[-1],
			  .mask = mask_of(uc), .nodefer = -1 };
	int n = 1;

	frames[0] = uc;
	*own = 0;
	if (max > 1 && (ret = returning(&w, uc))) {
		frames[n] = ret;
		*own = n++;
		w.mask = mask_of(ret);
		uc = ret;
	}
	walk_from(&w, (uintptr_t)uc->uc_mcontext.gregs[REG_RSP], &uc->uc_stack);
	return walk_out(&w, frames, n, max, own);
}

int mpk_arch_self_frames(int sig, void **frames, int max, int *own)
{
	struct k_sigaction k;
	sigset_t now;

	*own = -1;
	if (syscall(SYS_rt_sigaction, sig, NULL, &k, sizeof(k.mask)) || !k.restorer)
		return 0;
	/* From the caller: where its stack is, what it blocks. */
	if (pthread_sigmask(SIG_BLOCK, NULL, &now))
		return 0;
	struct walk w = { .pid = getpid(), .restorer = k.restorer, .nodefer = -1 };
	memcpy(&w.mask, &now, sizeof(w.mask));
	walk_from(&w, (uintptr_t)__builtin_frame_address(0), NULL);
	return walk_out(&w, frames, 0, max, own);
}
