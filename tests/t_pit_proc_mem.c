/* Pitfall: pread() of /proc/self/mem.  Forced access: it ignores keys and
 * PROT_NONE alike (hw and soft leak).  PR_SET_DUMPABLE 0 makes the file
 * root's, which stops an unprivileged process only (the tests run as root);
 * MPK_LOCK_PROC_MEM adds Landlock, which stops root too: EACCES. */
#include "t_pit.h"

static int attempt(void)
{
	char buf[64] = { 0 };
	int fd = open("/proc/self/mem", O_RDONLY);
	if (fd < 0)
		return pit_copy_outcome(-1, errno, buf);
	long rc = pread(fd, buf, sizeof(PIT_SECRET), (off_t)(uintptr_t)pit_secret);
	int e = errno;
	close(fd);
	return pit_copy_outcome(rc, e, buf);
}

int main(void)
{
	struct pit p = { "pread(/proc/self/mem)", attempt, NULL, MPK_LOCK_ERRNO | MPK_LOCK_PROC_MEM,
			 { B(O_LEAKED), B(O_LEAKED) }, { B(O_EACCES), B(O_EACCES) }, NULL, NULL,
			 { B(O_EFAULT), B(O_EFAULT) } };
	return pit_main(&p);
}
