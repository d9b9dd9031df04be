/* Pitfall: the 32-bit entry (int 0x80), whose numbers differ, and x32
 * numbers: a filter that checked only x86-64 numbers could be walked round.
 * After lockdown both are denied (the arch check, the x32 bit): EPERM. */
#include "t_pit.h"

static int attempt(void)
{
	long r;
	/* int 0x80 getpid (20); -ENOSYS without IA32 emulation */
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory", "cc", "r8", "r9", "r10", "r11");
	int a = r == getpid() ? O_ALLOWED : r == -EPERM ? O_EPERM : r == -ENOSYS ? O_NA : O_ERROR;
	long x = syscall(0x40000000L | SYS_getpid);
	int b = x == getpid() ? O_ALLOWED : errno == EPERM ? O_EPERM : errno == ENOSYS ? O_NA : O_ERROR;
	if (a == O_EPERM && b == O_EPERM)
		return O_EPERM;
	if (a == O_EPERM || b == O_EPERM)
		return O_ERROR; /* only one of them blocked */
	return a == O_ALLOWED || b == O_ALLOWED ? O_ALLOWED : a;
}

int main(void)
{
	struct pit p = { "int 0x80 / x32 entry", attempt, NULL, MPK_LOCK_ERRNO,
			 { B(O_ALLOWED) | B(O_NA), B(O_ALLOWED) | B(O_NA) }, { B(O_EPERM), B(O_EPERM) }, NULL };
	return pit_main(&p);
}
