/* SPDX-License-Identifier: MIT */
#include "t_gate.h"

uintptr_t gate_site;

void gate_landing(void)
{
	char buf[64] = { 0 };
	memcpy(buf, pit_secret, sizeof(PIT_SECRET));
	_exit(pit_copy_outcome(0, 0, buf));
}

void gate_land(void *ucv)
{
	ucontext_t *uc = ucv;
	greg_t *r = uc->uc_mcontext.gregs;
	r[REG_EFL] &= ~(greg_t)EFLAGS_TF;
	r[REG_RSP] = (greg_t)(((uintptr_t)r[REG_RSP] & ~(uintptr_t)15) - 8);
	r[REG_RIP] = (greg_t)(uintptr_t)gate_landing;
}

uintptr_t gate_ip(const void *ucv)
{
	const ucontext_t *uc = ucv;
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
}

uintptr_t gate_fail_of(uintptr_t site)
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

__attribute__((noreturn)) void gate_jump(uintptr_t site, bool trap)
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
