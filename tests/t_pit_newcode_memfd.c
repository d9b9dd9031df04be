/* Pitfall: a memfd mapped r-x before lockdown, written with pwrite()
 * after: the page cache is the mapping, the code changes under it.
 * mpk_lockdown() refuses (EBUSY) while executable memory of a memfd,
 * System V shared memory or a deleted file exists. */
#include "t_newcode.h"

static int fd = -1;
static void *x = MAP_FAILED;

static void setup(void)
{
	char page[4096] = { 0 };

	memcpy(page, newcode_old, sizeof(newcode_old));
	fd = memfd_create("newcode", 0);
	if (fd < 0 || write(fd, page, sizeof(page)) != (ssize_t)sizeof(page))
		return;
	x = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
}

static int attempt(void)
{
	if (x == MAP_FAILED)
		return O_ERROR;
	if (pwrite(fd, newcode_new, sizeof(newcode_new), 0) != (ssize_t)sizeof(newcode_new))
		return pit_copy_outcome(-1, errno, NULL);
	return newcode_call(x);
}

int main(void)
{
	struct pit p = { "pwrite to a memfd's code", attempt, setup, MPK_LOCK_ERRNO,
			 { B(O_LEAKED), B(O_SIGILL) }, { B(O_REFUSED), B(O_REFUSED) },
			 "lockdown refuses (EBUSY) while one is mapped executable" };
	return pit_main(&p);
}
