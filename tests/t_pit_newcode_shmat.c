/* Pitfall: new code through System V shared memory.  A segment written
 * through one attachment is attached again with SHM_EXEC: executable
 * without PROT_EXEC.  After lockdown shmat() with SHM_EXEC is denied
 * (EPERM, MPK_LOCK_ERRNO). */
#include "t_newcode.h"
#include <sys/shm.h>

#ifndef SHM_EXEC
#define SHM_EXEC 0100000
#endif

static int attempt(void)
{
	int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
	if (id < 0)
		return O_ERROR;
	unsigned char *w = shmat(id, NULL, 0);
	void *x = shmat(id, NULL, SHM_EXEC | SHM_RDONLY);
	int err = errno;
	shmctl(id, IPC_RMID, NULL); /* gone with the last detach */
	if (w == (void *)-1)
		return O_ERROR;
	memcpy(w, newcode_new, sizeof(newcode_new));
	if (x == (void *)-1)
		return pit_copy_outcome(-1, err, NULL);
	return newcode_call(x);
}

static const char *absent(void)
{
	int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
	if (id < 0)
		return "no System V shared memory here";
	shmctl(id, IPC_RMID, NULL);
	return NULL;
}

int main(void)
{
	struct pit p = { "shmat(SHM_EXEC)", attempt, NULL, MPK_LOCK_ERRNO,
			 { B(O_LEAKED), B(O_SIGILL) }, { B(O_EPERM), B(O_EPERM) },
			 "SHM_EXEC is denied", absent };
	return pit_main(&p);
}
