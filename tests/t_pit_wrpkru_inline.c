/* Pitfall: an inline WRPKRU (this program's own code) opens every key.  No
 * filter sees instructions: lockdown cannot stop it once it runs, but
 * MPK_LOCK_SCAN finds it, a gadget (the code sets EAX to 0 itself), and
 * refuses to lock, EPERM; glibc's pkey_set and ld.so's trampolines alone
 * would not refuse (ROP-only: t_scan_lockdown).  On soft there is no
 * WRPKRU: SIGILL. */
#include "t_pit.h"

static int attempt(void)
{
	char buf[64] = { 0 };
	__asm__ volatile(".byte 0x0f,0x01,0xef" : : "a"(0), "c"(0), "d"(0) : "memory");
	memcpy(buf, pit_secret, sizeof(PIT_SECRET));
	return pit_copy_outcome(0, 0, buf);
}

int main(void)
{
	struct pit p = { "inline WRPKRU", attempt, NULL, MPK_LOCK_ERRNO | MPK_LOCK_SCAN,
			 { B(O_LEAKED), B(O_SIGILL) }, { B(O_REFUSED), B(O_REFUSED) },
			 "detected only: the scan refuses" };
	return pit_main(&p);
}
