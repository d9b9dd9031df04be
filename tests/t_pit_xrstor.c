/* Pitfall: XRSTOR of an XSAVE image whose PKRU component is 0 (all keys
 * open).  As with WRPKRU, only the scan can see it: a gadget (the code asks
 * for PKRU, bit 9 of EAX, itself), and MPK_LOCK_SCAN refuses.
 * Where XCR0 has no PKRU component (no PKU: soft) an image naming it makes
 * XRSTOR raise #GP: SIGSEGV, and the page stays PROT_NONE anyway. */
#include <cpuid.h>
#include "t_pit.h"

static int attempt(void)
{
	char buf[64] = { 0 };
	unsigned a, b, c, d;
	static unsigned char area[8192] __attribute__((aligned(64)));

	if (!__get_cpuid_count(0xd, 0, &a, &b, &c, &d) || b > sizeof(area))
		return O_NA;
	__get_cpuid_count(0xd, 9, &a, &b, &c, &d); /* EBX: PKRU's offset */
	uint64_t bv = 1ull << 9;
	memset(area, 0, sizeof(area));
	memcpy(area + 512, &bv, 8);   /* XSTATE_BV: PKRU present */
	if (b && b + 4 <= sizeof(area))
		memset(area + b, 0, 4); /* PKRU = 0 */
	__asm__ volatile("xrstor %0" : : "m"(area), "a"(1u << 9), "d"(0) : "memory");
	memcpy(buf, pit_secret, sizeof(PIT_SECRET));
	return pit_copy_outcome(0, 0, buf);
}

int main(void)
{
	struct pit p = { "XRSTOR with PKRU 0", attempt, NULL, MPK_LOCK_ERRNO | MPK_LOCK_SCAN,
			 { B(O_LEAKED), B(O_FAULT) }, { B(O_REFUSED), B(O_REFUSED) },
			 "detected only: the scan refuses" };
	return pit_main(&p);
}
