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

extern uintptr_t gate_site;

/* Read the secret and end the child with the outcome. */
void gate_landing(void);

/* The interrupted thread goes to the landing (stack aligned as after a
 * call), with the trap flag off. */
void gate_land(void *ucv);

/* Where the interrupted thread stands. */
uintptr_t gate_ip(const void *ucv);

/* Where the check after the WRPKRU at site jumps on a mismatch
 * (mpk_arch_wrpkru_fail): [REX] cmp r32, %eax, then jne rel32 or rel8.
 * 0 unless the bytes there are that path's first two instructions, the
 * write(2, ...) of its message: movl $1, %eax; movl $2, %edi. */
uintptr_t gate_fail_of(uintptr_t site);

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

__attribute__((noreturn)) void gate_jump(uintptr_t site, bool trap);

#endif
