/* Pitfall: XRSTOR of an XSAVE image whose PKRU component is 0 (all keys
 * open).  As with WRPKRU, only the scan can see it: a gadget (the code asks
 * for PKRU, bit 9 of EAX, itself), and MPK_LOCK_SCAN refuses.
 * Where XCR0 has no PKRU component (no PKU: soft) an image naming it makes
 * XRSTOR raise #GP: SIGSEGV, and the page stays PROT_NONE anyway. */
#include <cpuid.h>
#include <sys/mman.h>
#include "t_pit.h"

/* The XSAVE area, as large as this CPU's enabled features make it
 * (CPUID.(0xD,0).EBX: 11,008 bytes with AMX's tiles in XCR0), mapped
 * before lockdown. */
static unsigned char *area;
static size_t area_len;

static void setup(void)
{
	unsigned a, b, c, d;

	if (!__get_cpuid_count(0xd, 0, &a, &b, &c, &d) || !b)
		return;
	area_len = b;
	void *p = mmap(NULL, b, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED) /* page-aligned: XRSTOR wants 64 */
		area = p;
}

static int attempt(void)
{
	char buf[64] = { 0 };
	unsigned a, b = 0, c, d;

	if (!area) /* no XSAVE (CPUID leaf 0xD), or no memory for its area */
		return area_len ? O_ERROR : O_NA;
	__get_cpuid_count(0xd, 9, &a, &b, &c, &d); /* EBX: PKRU's offset */
	uint64_t bv = 1ull << 9;
	memcpy(area + 512, &bv, 8);   /* XSTATE_BV: PKRU present */
	if (b && b + 4 <= area_len)
		memset(area + b, 0, 4); /* PKRU = 0 (the mapping is zeroed anyway) */
	__asm__ volatile("xrstor %0" : : "m"(*area), "a"(1u << 9), "d"(0) : "memory");
	memcpy(buf, pit_secret, sizeof(PIT_SECRET));
	return pit_copy_outcome(0, 0, buf);
}

int main(void)
{
	struct pit p = { "XRSTOR with PKRU 0", attempt, setup, MPK_LOCK_ERRNO | MPK_LOCK_SCAN,
			 { B(O_LEAKED), B(O_FAULT) }, { B(O_REFUSED), B(O_REFUSED) },
			 "detected only: the scan refuses" };
	return pit_main(&p);
}
