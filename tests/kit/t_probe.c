/* SPDX-License-Identifier: MIT */
#include "t_probe.h"

__thread volatile struct t_probe_state t_pr;

bool t_touch(unsigned char *p, bool write, unsigned char v, unsigned char *got)
{
	unsigned char a = v;
	t_pr.faulted = 0;
	t_pr.armed = 1;
	if (write)
		__asm__ volatile("movb %%al, (%%rdi)" : : "a"(a), "D"(p) : "memory");
	else
		__asm__ volatile("movb (%%rdi), %%al" : "+a"(a) : "D"(p) : "memory");
	t_pr.armed = 0;
	if (got)
		*got = a;
	return t_pr.faulted;
}

bool t_probe_caught(const siginfo_t *si, ucontext_t *uc)
{
	if (!t_pr.armed)
		return false;
	t_pr.armed = 0;
	t_pr.faulted = 1;
	t_pr.code = si->si_code;
	t_pr.pkey = (int)si->si_pkey;
	t_pr.addr = si->si_addr;
	uc->uc_mcontext.gregs[REG_RIP] += 2; /* movb (%rdi),%al / movb %al,(%rdi) */
	return true;
}
