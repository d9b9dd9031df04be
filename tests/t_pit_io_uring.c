/* Pitfall: io_uring's io-wq workers.  They are threads of the process
 * that copy user memory on its behalf; a worker born while the domain was
 * open (an async NOP inside MPK_WITH) then writes the closed secret to a
 * pipe (IORING_OP_WRITE, IOSQE_ASYNC).  The row records what the kernel
 * does: EFAULT on 6.1 and 6.12, the worker did not keep the open rights
 * (an SQPOLL thread does: t_pit_io_uring_sqpoll).  On soft the page is
 * PROT_NONE: EFAULT.  After lockdown io_uring_setup fails with EPERM. */
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
		if (ring_init(&r, 0, 0))
			return pit_copy_outcome(-1, errno, buf);
		res = ring_do(&r, IORING_OP_NOP, IOSQE_ASYNC, -1, NULL, 0, 0); /* a worker is born */
	}
	if (res < 0)
		return O_ERROR;
	res = ring_do(&r, IORING_OP_WRITE, IOSQE_ASYNC, fds[1], pit_secret, sizeof(PIT_SECRET), 0);
	if (res < 0)
		return pit_copy_outcome(-1, -res, buf);
	if (read(fds[0], buf, sizeof(buf)) < 0)
		return O_ERROR;
	return pit_copy_outcome(0, 0, buf);
}

int main(void)
{
	struct pit p = { "io_uring async write", attempt, NULL, MPK_LOCK_ERRNO,
			 { B(O_EFAULT), B(O_EFAULT) }, { B(O_EPERM), B(O_EPERM) }, "the worker did not keep the open rights" };
	return pit_main(&p);
}
