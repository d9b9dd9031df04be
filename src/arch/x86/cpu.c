/* SPDX-License-Identifier: MIT */
/* x86-64: CPUID detection and the PKRU image in a signal frame. */
#define _GNU_SOURCE
#include <cpuid.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

#include "../arch.h"

#define CPUID7_ECX_PKU   (1u << 3)
#define CPUID7_ECX_OSPKE (1u << 4)
#define XFEATURE_PKRU    9
#define XSTATE_MAGIC1    0x46505853u
#define XSAVE_HDR_OFFSET 512 /* XSTATE_BV follows the 512-byte legacy area */
#define SW_BYTES_OFFSET  464 /* software-reserved bytes of the legacy area */

void mpk_arch_caps(struct mpk_arch_caps *caps)
{
	unsigned a, b, c, d;

	memset(caps, 0, sizeof(*caps));
	if (__get_cpuid_max(0, NULL) < 7)
		return;
	__cpuid_count(7, 0, a, b, c, d);
	caps->cpu_keys = c & CPUID7_ECX_PKU;
	caps->os_enabled = c & CPUID7_ECX_OSPKE;
}

/* Where PKRU lives in the standard-format XSAVE area: CPUID.(0xD,9).EBX.
 * Read once and cached; 0 means unknown.  Must be called outside signal
 * context first (mpk init does), so the handler only reads a word. */
static uint32_t pkru_offset;

static uint32_t xsave_pkru_offset(void)
{
	if (!pkru_offset) {
		unsigned a, b, c, d;
		if (__get_cpuid_max(0, NULL) < 0xd)
			return 0;
		__cpuid_count(0xd, XFEATURE_PKRU, a, b, c, d);
		if (a >= 4)
			__atomic_store_n(&pkru_offset, b, __ATOMIC_RELAXED);
	}
	return __atomic_load_n(&pkru_offset, __ATOMIC_RELAXED);
}

/* Locate the PKRU slot of the frame's XSAVE image, or NULL.  The frame is
 * only trusted when the kernel marked it as an extended (XSAVE) frame that
 * is large enough and carries the PKRU feature. */
static uint8_t *frame_xsave(void *ucontext, uint32_t *off)
{
	ucontext_t *uc = ucontext;
	uint8_t *fp = (uint8_t *)uc->uc_mcontext.fpregs;
	uint32_t magic, size;
	uint64_t features;

	*off = xsave_pkru_offset();
	if (!fp || !*off)
		return NULL;
	memcpy(&magic, fp + SW_BYTES_OFFSET, 4);
	memcpy(&size, fp + SW_BYTES_OFFSET + 16, 4);
	memcpy(&features, fp + SW_BYTES_OFFSET + 8, 8);
	if (magic != XSTATE_MAGIC1 || size < *off + 4 ||
	    !(features & (1ull << XFEATURE_PKRU)))
		return NULL;
	return fp;
}

bool mpk_arch_frame_reg_get(void *ucontext, mpk_reg_t *reg)
{
	uint32_t off;
	uint64_t bv;
	uint8_t *fp = frame_xsave(ucontext, &off);

	if (!fp)
		return false;
	memcpy(&bv, fp + XSAVE_HDR_OFFSET, 8);
	/* A clear XSTATE_BV bit means the component is in its init state,
	 * which for PKRU is 0 (all access). */
	if (bv & (1ull << XFEATURE_PKRU))
		memcpy(reg, fp + off, 4);
	else
		*reg = 0;
	return true;
}

bool mpk_arch_frame_reg_set(void *ucontext, mpk_reg_t reg)
{
	uint32_t off;
	uint64_t bv;
	uint8_t *fp = frame_xsave(ucontext, &off);

	if (!fp)
		return false;
	memcpy(fp + off, &reg, 4);
	memcpy(&bv, fp + XSAVE_HDR_OFFSET, 8);
	bv |= 1ull << XFEATURE_PKRU;
	memcpy(fp + XSAVE_HDR_OFFSET, &bv, 8);
	return true;
}

bool mpk_arch_fault_is_write(const void *ucontext)
{
	const ucontext_t *uc = ucontext;
	/* Page-fault error code bit 1: the access was a write. */
	return uc->uc_mcontext.gregs[REG_ERR] & 2;
}

bool mpk_arch_fault_is_fetch(const void *ucontext)
{
	const ucontext_t *uc = ucontext;
	/* Error code bit 4: instruction fetch. */
	return uc->uc_mcontext.gregs[REG_ERR] & 16;
}

#define EFLAGS_TF 0x100

/* sigreturn restores TF from the frame: the thread traps after one
 * instruction. */
void mpk_arch_frame_step(void *ucontext, bool on)
{
	ucontext_t *uc = ucontext;
	if (on)
		uc->uc_mcontext.gregs[REG_EFL] |= EFLAGS_TF;
	else
		uc->uc_mcontext.gregs[REG_EFL] &= ~(greg_t)EFLAGS_TF;
}

void *mpk_arch_frame_ip(const void *ucontext)
{
	const ucontext_t *uc = ucontext;
	return (void *)uc->uc_mcontext.gregs[REG_RIP];
}

/* [start, WRPKRU] of every mpk_arch_reg_update() copy, from the linker;
 * weak so that a program without one still links. */
struct restart_range {
	uintptr_t start, last;
};
extern const struct restart_range __start_mpk_restart[]
	__attribute__((weak, visibility("hidden")));
extern const struct restart_range __stop_mpk_restart[]
	__attribute__((weak, visibility("hidden")));

void mpk_arch_frame_restart(void *ucontext)
{
	ucontext_t *uc = ucontext;
	uintptr_t ip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];

	for (const struct restart_range *r = __start_mpk_restart; r < __stop_mpk_restart; r++)
		if (ip >= r->start && ip <= r->last) {
			uc->uc_mcontext.gregs[REG_RIP] = (greg_t)r->start;
			return;
		}
}

uintptr_t mpk_arch_thread_pointer(void)
{
	uintptr_t tp;

	/* glibc and musl both keep the pointer itself at %fs:0. */
	__asm__ volatile("mov %%fs:0, %0" : "=r"(tp));
	return tp;
}

/* Every checked WRPKRU site (pkru.h), as self-relative offsets. */
extern const int32_t __start_mpk_wrpkru_sites[] __attribute__((weak, visibility("hidden")));
extern const int32_t __stop_mpk_wrpkru_sites[] __attribute__((weak, visibility("hidden")));
extern const char mpk_arch_wrpkru_fail[] __attribute__((visibility("hidden")));

#define CHECK_LEN 16 /* the WRPKRU, the compare and the jump, and more */

void mpk_arch_gate_span(uintptr_t *lo, uintptr_t *hi)
{
	*lo = *hi = (uintptr_t)mpk_arch_wrpkru_fail;
	*hi += CHECK_LEN * 4; /* the failure path: two system calls */
	for (const int32_t *e = __start_mpk_wrpkru_sites; e < __stop_mpk_wrpkru_sites; e++) {
		uintptr_t site = (uintptr_t)e + (intptr_t)*e;
		if (site < *lo)
			*lo = site;
		if (site + CHECK_LEN > *hi)
			*hi = site + CHECK_LEN;
	}
}

/*
 * Where a checked WRPKRU site (pkru.h) goes when the value written is not
 * the one the library computed: someone jumped onto the WRPKRU with a value
 * of their own.  PKRU already holds it, so nothing of the caller may run:
 * no return, no handler, no libc.  A line on stderr, then exit_group(134)
 * (the status of abort()) straight from here.
 */
__asm__(".text\n"
	".globl mpk_arch_wrpkru_fail\n"
	".hidden mpk_arch_wrpkru_fail\n"
	".type mpk_arch_wrpkru_fail, @function\n"
	"mpk_arch_wrpkru_fail:\n\t"
	"movl $1, %eax\n\t" /* write(2, msg, len) */
	"movl $2, %edi\n\t"
	"leaq mpk_arch_wrpkru_msg(%rip), %rsi\n\t"
	"movl $mpk_arch_wrpkru_msg_end - mpk_arch_wrpkru_msg, %edx\n\t"
	"syscall\n\t"
	"movl $231, %eax\n\t" /* exit_group(134) */
	"movl $134, %edi\n\t"
	"syscall\n\t"
	"ud2\n"
	".size mpk_arch_wrpkru_fail, . - mpk_arch_wrpkru_fail\n"
	".section .rodata\n"
	"mpk_arch_wrpkru_msg:\n\t"
	".ascii \"mpkit: a WRPKRU site wrote a value mpkit did not compute: exiting\\n\"\n"
	"mpk_arch_wrpkru_msg_end:\n"
	".text\n");

/*
 * mpkit's own system-call instruction.  After mpk_lockdown() the seccomp
 * filter lets calls that change domain memory (mprotect, pkey_mprotect,
 * mmap over it, munmap, madvise, pkey_alloc/free) through only when they
 * come from here: seccomp sees the instruction pointer, which is
 * mpk_arch_syscall_ip (just after the syscall instruction).  Returns the
 * raw result (-4095..-1: -errno).
 */
__asm__(".text\n"
	".globl mpk_arch_syscall6\n"
	".hidden mpk_arch_syscall6\n"
	".type mpk_arch_syscall6, @function\n"
	"mpk_arch_syscall6:\n\t"
	"movq %rdi, %rax\n\t"
	"movq %rsi, %rdi\n\t"
	"movq %rdx, %rsi\n\t"
	"movq %rcx, %rdx\n\t"
	"movq %r8, %r10\n\t"
	"movq %r9, %r8\n\t"
	"movq 8(%rsp), %r9\n\t"
	"syscall\n"
	".globl mpk_arch_syscall_ip\n"
	".hidden mpk_arch_syscall_ip\n"
	"mpk_arch_syscall_ip:\n\t"
	"ret\n"
	".size mpk_arch_syscall6, . - mpk_arch_syscall6\n");
