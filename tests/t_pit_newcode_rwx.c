/* Pitfall: a writable and executable mapping made before lockdown is
 * written after it.  The filter cannot see protections, only the calls
 * that change them: mpk_lockdown() refuses (EBUSY) while such a mapping
 * exists outside domain memory. */
#include "t_newcode.h"

static unsigned char *rwx;

static void setup(void)
{
	rwx = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

static int attempt(void)
{
	if (rwx == MAP_FAILED)
		return O_ERROR;
	memcpy(rwx, newcode_new, sizeof(newcode_new));
	return newcode_call(rwx);
}

int main(void)
{
	struct pit p = { "rwx mapping of before", attempt, setup, MPK_LOCK_ERRNO,
			 { B(O_LEAKED), B(O_SIGILL) }, { B(O_REFUSED), B(O_REFUSED) },
			 "lockdown refuses (EBUSY) while one exists" };
	return pit_main(&p);
}
