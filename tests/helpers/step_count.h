/* SPDX-License-Identifier: MIT */
/*
 * Counting the instructions of a stretch of code by single-stepping it
 * (the trap flag: a SIGTRAP after each instruction, whose handler looks
 * at the next one): instructions, WRPKRU and system calls.  Set
 * step_trap() as the SIGTRAP handler (SA_SIGINFO), then STEP_START(),
 * the code, step_stop(): the counts are in steps, wrpkru, syscalls.
 * Header-only, for t_heap_cost and guard-prog (which links nothing of
 * the tests).
 */
#ifndef MPK_TEST_STEP_COUNT_H
#define MPK_TEST_STEP_COUNT_H

#include <signal.h>
#include <ucontext.h>

static volatile long steps, wrpkru, syscalls;

__attribute__((noinline)) static void step_stop(void)
{
	__asm__ volatile("");
}

static void step_trap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	const unsigned char *ip = (const unsigned char *)uc->uc_mcontext.gregs[REG_RIP];

	(void)sig;
	(void)si;
	if (ip == (const unsigned char *)step_stop) {
		uc->uc_mcontext.gregs[REG_EFL] &= ~0x100L;
		return;
	}
	steps++;
	if (ip[0] == 0x0f && ip[1] == 0x01 && ip[2] == 0xef)
		wrpkru++;
	if (ip[0] == 0x0f && ip[1] == 0x05)
		syscalls++;
}

#define STEP_START()                                                                                    \
	do {                                                                                            \
		steps = wrpkru = syscalls = 0;                                                          \
		__asm__ volatile("pushfq; orq $0x100, (%%rsp); popfq" ::: "memory", "cc");              \
	} while (0)

#endif
