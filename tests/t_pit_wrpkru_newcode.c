/* Pitfall: WRPKRU written into new executable memory (a JIT, or an
 * exploit's shellcode).  After lockdown no mapping or protection change may
 * carry PROT_EXEC: EPERM, at mmap and at mprotect (the system calls: musl
 * turns an anonymous mmap()'s EPERM into ENOMEM). */
#include "t_pit.h"

static int attempt(void)
{
	char buf[64] = { 0 };
	/* xor ecx,ecx; xor edx,edx; xor eax,eax; wrpkru; ret */
	static const unsigned char code[] = { 0x31, 0xc9, 0x31, 0xd2, 0x31, 0xc0, 0x0f, 0x01, 0xef, 0xc3 };
	void *x = t_mmap_sys(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (x == MAP_FAILED) {
		int e = errno;
		x = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (x == MAP_FAILED || mprotect(x, 4096, PROT_READ | PROT_EXEC) == 0 || errno != e)
			return O_ERROR; /* the filter must refuse both ways alike */
		return pit_copy_outcome(-1, e, buf);
	}
	memcpy(x, code, sizeof(code));
	((void (*)(void))x)();
	memcpy(buf, pit_secret, sizeof(PIT_SECRET));
	return pit_copy_outcome(0, 0, buf);
}

int main(void)
{
	struct pit p = { "WRPKRU in new code", attempt, NULL, MPK_LOCK_ERRNO,
			 { B(O_LEAKED), B(O_SIGILL) }, { B(O_EPERM), B(O_EPERM) }, NULL };
	return pit_main(&p);
}
