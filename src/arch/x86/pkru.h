/* SPDX-License-Identifier: MIT */
/* x86-64 PKRU: two bits per key, AD (access disable) and WD (write disable). */
#ifndef MPK_ARCH_X86_PKRU_H
#define MPK_ARCH_X86_PKRU_H

#include <stdint.h>

typedef uint32_t mpk_reg_t;

#define MPK_ARCH_NKEYS 16
/* The kernel's value for new signal handlers: every key but 0 disabled. */
#define MPK_ARCH_REG_DEFAULT 0x55555554u

/* RDPKRU: ECX must be 0; EDX is clobbered.  Reading changes nothing, so
 * no memory clobber; volatile keeps it ordered against WRPKRU. */
static inline mpk_reg_t mpk_arch_reg_read(void)
{
	uint32_t eax, edx;
	__asm__ volatile(".byte 0x0f,0x01,0xee" /* rdpkru */
			 : "=a"(eax), "=d"(edx)
			 : "c"(0));
	return eax;
}

/* WRPKRU: ECX = EDX = 0.  The "memory" clobber keeps the compiler from
 * moving domain-memory accesses across a rights change. */
static inline void mpk_arch_reg_write(mpk_reg_t reg)
{
	__asm__ volatile(".byte 0x0f,0x01,0xef" /* wrpkru */
			 :
			 : "a"(reg), "c"(0), "d"(0)
			 : "memory");
}

/* mpkit rights (NONE 0, READ 1, RW 3) to the two PKRU bits and back:
 * NONE -> AD|WD, READ -> WD, RW -> 0.  Branch-free for the fast path. */
static inline mpk_reg_t mpk_arch_key_bits(int key, int rights)
{
	return (mpk_reg_t)(~rights & 3) << (2 * key);
}

static inline mpk_reg_t mpk_arch_key_mask(int key)
{
	return (mpk_reg_t)3 << (2 * key);
}

static inline int mpk_arch_key_rights(mpk_reg_t reg, int key)
{
	unsigned bits = (reg >> (2 * key)) & 3;
	if (bits & 1)
		return 0; /* AD: no access */
	return (bits & 2) ? 1 : 3;
}

#endif
