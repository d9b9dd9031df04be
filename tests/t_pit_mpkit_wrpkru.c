/* Pitfall: a jump onto one of mpkit's own WRPKRU sites with EAX = 0 (every
 * key open).  Each site compares EAX with the value mpkit computed right
 * after the write and exits (134) on a mismatch, before the caller runs
 * again: with or without lockdown.  On soft: SIGILL. */
#include "t_pit.h"

extern const int32_t __start_mpk_wrpkru_sites[] __attribute__((visibility("hidden")));

static int attempt(void)
{
	const int32_t *e = __start_mpk_wrpkru_sites;
	static volatile uintptr_t site;
	site = (uintptr_t)e + (intptr_t)*e;
	/* every register the check could compare with holds 0x11111111 */
	__asm__ volatile("movl $0x11111111, %%ebx\n\t"
			 "movl %%ebx, %%esi\n\tmovl %%ebx, %%edi\n\tmovl %%ebx, %%r8d\n\t"
			 "movl %%ebx, %%r9d\n\tmovl %%ebx, %%r10d\n\tmovl %%ebx, %%r11d\n\t"
			 "movl %%ebx, %%r12d\n\tmovl %%ebx, %%r13d\n\tmovl %%ebx, %%r14d\n\t"
			 "movl %%ebx, %%r15d\n\tmovl %%ebx, %%ebp\n\t"
			 "xorl %%eax, %%eax\n\txorl %%ecx, %%ecx\n\txorl %%edx, %%edx\n\t"
			 "jmp *%0"
			 : : "m"(site) : "memory");
	__builtin_unreachable();
}

static void *volatile keep = (void *)mpk_set; /* links the sites in */

int main(void)
{
	(void)keep;
	struct pit p = { "jump onto mpkit's WRPKRU", attempt, NULL, MPK_LOCK_ERRNO,
			 { B(O_CHECK), B(O_SIGILL) }, { B(O_CHECK), B(O_SIGILL) },
			 "the call gate, lockdown or not" };
	return pit_main(&p);
}
