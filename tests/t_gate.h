/* SPDX-License-Identifier: MIT */
/*
 * For the pitfalls that go around mpkit's call gate (the check after each
 * of its WRPKRUs): jump onto a site with EAX 0, and, from a signal handler
 * that stopped the thread between the WRPKRU and its check, send it to a
 * landing that reads the secret with whatever PKRU sigreturn gave back.
 */
#ifndef MPK_TEST_GATE_H
#define MPK_TEST_GATE_H

#include "t_pit.h"

#include <ucontext.h>

#define EFLAGS_TF 0x100

static uintptr_t gate_site __attribute__((unused));

/* Read the secret and end the child with the outcome. */
static void gate_landing(void)
{
	char buf[64] = { 0 };
	memcpy(buf, pit_secret, sizeof(PIT_SECRET));
	_exit(pit_copy_outcome(0, 0, buf));
}

/* The interrupted thread goes to the landing (stack aligned as after a
 * call), with the trap flag off. */
static inline void gate_land(void *ucv)
{
	ucontext_t *uc = ucv;
	greg_t *r = uc->uc_mcontext.gregs;
	r[REG_EFL] &= ~(greg_t)EFLAGS_TF;
	r[REG_RSP] = (greg_t)(((uintptr_t)r[REG_RSP] & ~(uintptr_t)15) - 8);
	r[REG_RIP] = (greg_t)(uintptr_t)gate_landing;
}

/* Where the interrupted thread stands. */
static inline uintptr_t gate_ip(const void *ucv)
{
	const ucontext_t *uc = ucv;
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
}

/* Where the check after the WRPKRU at site jumps on a mismatch
 * (mpk_arch_wrpkru_fail): [REX] cmp r32, %eax, then jne rel32 or rel8.
 * 0 unless the bytes there are that path's first two instructions, the
 * write(2, ...) of its message: movl $1, %eax; movl $2, %edi. */
static inline uintptr_t gate_fail_of(uintptr_t site)
{
	static const unsigned char start[] = { 0xb8, 1, 0, 0, 0, 0xbf, 2, 0, 0, 0 };
	const unsigned char *p = (const unsigned char *)site + 3;
	uintptr_t to;
	int32_t rel;

	p += (p[0] & 0xf0) == 0x40;
	p += 2;
	if (p[0] == 0x75) {
		to = (uintptr_t)p + 2 + (intptr_t)(int8_t)p[1];
	} else {
		memcpy(&rel, p + 2, 4);
		to = (uintptr_t)p + 6 + (intptr_t)rel;
	}
	return memcmp((const void *)to, start, sizeof(start)) ? 0 : to;
}

/* Jump onto mpkit's WRPKRU at site with EAX = ECX = EDX = 0 and every other
 * register the check could compare with holding 0x11111111; with the trap
 * flag set if trap (set last: the CPU traps after the jump, on the site). */
#define GATE_REGS                                                             \
	"movl $0x11111111, %%ebx\n\t"                                          \
	"movl %%ebx, %%esi\n\tmovl %%ebx, %%edi\n\tmovl %%ebx, %%r8d\n\t"       \
	"movl %%ebx, %%r9d\n\tmovl %%ebx, %%r10d\n\tmovl %%ebx, %%r11d\n\t"     \
	"movl %%ebx, %%r12d\n\tmovl %%ebx, %%r13d\n\tmovl %%ebx, %%r14d\n\t"    \
	"movl %%ebx, %%r15d\n\tmovl %%ebx, %%ebp\n\t"                           \
	"xorl %%eax, %%eax\n\txorl %%ecx, %%ecx\n\txorl %%edx, %%edx\n\t"

static inline __attribute__((noreturn)) void gate_jump(uintptr_t site, bool trap)
{
	static volatile uintptr_t to;
	to = site;
	if (trap)
		__asm__ volatile(GATE_REGS "pushfq\n\torq $0x100, (%%rsp)\n\tpopfq\n\tjmp *%0"
				 : : "m"(to) : "memory");
	else
		__asm__ volatile(GATE_REGS "jmp *%0" : : "m"(to) : "memory");
	__builtin_unreachable();
}

#endif
