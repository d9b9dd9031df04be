/* Pitfall: io_uring's SQPOLL thread (iou-sqp-PID), made while the domain
 * is open, takes a write of the closed secret to a pipe from the shared
 * ring, with no system call of the process.  After lockdown
 * io_uring_setup fails with EPERM. */
#include "t_pit.h"
#include "t_uring.h"

static int attempt(void)
{
	struct ring r;
	int fds[2], res = 0;
	char buf[64] = { 0 };

	if (pipe(fds))
		return O_ERROR;
	MPK_WITH(pit_dom, MPK_READ) {
		if (ring_init(&r, IORING_SETUP_SQPOLL, 10000))
			return pit_copy_outcome(-1, errno, buf);
		res = ring_do(&r, IORING_OP_NOP, 0, -1, NULL, 0, 0);
	}
	if (res < 0)
		return O_ERROR;
	res = ring_do(&r, IORING_OP_WRITE, 0, fds[1], pit_secret, sizeof(PIT_SECRET), 0);
	if (res < 0)
		return pit_copy_outcome(-1, -res, buf);
	if (read(fds[0], buf, sizeof(buf)) < 0)
		return O_ERROR;
	return pit_copy_outcome(0, 0, buf);
}

int main(void)
{
	struct pit p = { "io_uring SQPOLL thread", attempt, NULL, MPK_LOCK_ERRNO,
			 { B(O_LEAKED), B(O_EFAULT) }, { B(O_EPERM), B(O_EPERM) }, "hw: the thread keeps its creator's PKRU" };
	return pit_main(&p);
}
