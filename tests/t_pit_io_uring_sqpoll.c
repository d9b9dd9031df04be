/* Pitfall: io_uring's SQPOLL thread (iou-sqp-PID), made while the domain
 * is open, takes a write of the closed secret to a pipe from the shared
 * ring, with no system call of the process.  After lockdown
 * io_uring_setup fails with EPERM. */
#include "t_pit.h"
#include "t_uring.h"

static int attempt(void)
{
	struct ring r;
	int fds[2], res;

	if (pipe(fds))
		return pit_error("pipe()", errno);
	if ((res = ring_born_open(&r, MPK_READ, IORING_SETUP_SQPOLL, 0)))
		return res;
	return ring_leak_to_pipe(&r, IORING_OP_WRITE, 0, fds);
}

int main(void)
{
	struct pit p = { "io_uring SQPOLL thread", attempt, NULL, MPK_LOCK_ERRNO,
			 { B(O_LEAKED), B(O_EFAULT) }, { B(O_EPERM), B(O_EPERM) }, "hw: the thread keeps its creator's PKRU",
			 uring_sqpoll_absent };
	return pit_main(&p);
}
