/* Pitfall: the 32-bit entry (int 0x80), whose numbers differ, and x32
 * numbers: a filter that checked only x86-64 numbers could be walked round.
 * After lockdown both are denied (the arch check, the x32 bit): EPERM.
 * A kernel without IA32 emulation (not built, or ia32_emulation=0) has no
 * int 0x80 entry: the instruction raises SIGSEGV before lockdown and after,
 * and only the x32 entry, which seccomp sees on every kernel, is tested. */
#include "t_pit.h"

/* The child of entry32(). */
static int int80(void *arg)
{
	long r;
	(void)arg;
	pit_default_segv();
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory", "cc", "r8", "r9", "r10", "r11");
	return r == syscall(SYS_getpid) ? O_ALLOWED : r == -EPERM ? O_EPERM : r == -ENOSYS ? O_NA : O_ERROR;
}

/* int 0x80 getpid (20), in a child: where there is no 32-bit entry the
 * instruction kills it with SIGSEGV. */
static int entry32(void)
{
	struct t_child c = t_child_ret(int80, NULL, 0);
	if (c.signal)
		return c.signal == SIGSEGV ? O_NA : c.signal == SIGSYS ? O_KILLED : O_ERROR;
	return c.exit_code;
}

/* getpid with the x32 bit: ENOSYS where the kernel has no x32 ABI. */
static int x32(void)
{
	long x = syscall(0x40000000L | SYS_getpid);
	return x == getpid() ? O_ALLOWED : errno == EPERM ? O_EPERM : errno == ENOSYS ? O_NA : O_ERROR;
}

/* The entries this kernel has must agree: one blocked and the other not
 * is a hole. */
static int attempt(void)
{
	int a = entry32(), b = x32();
	if (a == O_NA)
		return b;
	if (b == O_NA)
		return a;
	return a == b ? a : O_ERROR;
}

int main(void)
{
	struct pit p = { "int 0x80 / x32 entry", attempt, NULL, MPK_LOCK_ERRNO,
			 { B(O_ALLOWED) | B(O_NA), B(O_ALLOWED) | B(O_NA) }, { B(O_EPERM), B(O_EPERM) }, NULL };
	if (entry32() == O_NA)
		p.note = "no int 0x80 entry on this kernel (SIGSEGV: no IA32 emulation): x32 only";
	return pit_main(&p);
}
