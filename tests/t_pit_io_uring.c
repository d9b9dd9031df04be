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
	int fds[2], res;

	if (pipe(fds))
		return O_ERROR;
	if ((res = ring_born_open(&r, MPK_READ, 0, IOSQE_ASYNC)))
		return res;
	return ring_leak_to_pipe(&r, IORING_OP_WRITE, IOSQE_ASYNC, fds);
}

int main(void)
{
	struct pit p = { "io_uring async write", attempt, NULL, MPK_LOCK_ERRNO,
			 { B(O_EFAULT), B(O_EFAULT) }, { B(O_EPERM), B(O_EPERM) }, "the worker did not keep the open rights",
			 uring_absent };
	return pit_main(&p);
}
