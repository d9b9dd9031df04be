/* Pitfall: io_uring registered buffers.  Registering pins the pages
 * (the kernel checks the caller's access then: done inside MPK_WITH, it
 * succeeds); later operations on a fixed buffer go through the pinned
 * pages' kernel mapping, where no key and no page protection of the
 * process applies.  So after the domain is closed, IORING_OP_WRITE_FIXED
 * copies the secret to a pipe.  After lockdown io_uring_setup fails with
 * EPERM. */
#include "t_pit.h"
#include "t_uring.h"

static int attempt(void)
{
	struct ring r;
	int fds[2], res = 0;

	if (pipe(fds))
		return O_ERROR;
	if (ring_init(&r, 0, 0))
		return pit_copy_outcome(-1, errno, NULL);
	MPK_WITH(pit_dom, MPK_RW) /* the kernel pins for writing */
		res = ring_register_buffer(&r, pit_secret, 4096) ? -errno : 0;
	if (res < 0)
		return pit_copy_outcome(-1, -res, NULL);
	return ring_leak_to_pipe(&r, IORING_OP_WRITE_FIXED, 0, fds);
}

int main(void)
{
	struct pit p = { "io_uring fixed buffer", attempt, NULL, MPK_LOCK_ERRNO,
			 { B(O_LEAKED), B(O_LEAKED) }, { B(O_EPERM), B(O_EPERM) }, "pinned pages: no key applies",
			 uring_absent, { B(O_EFAULT), B(O_EFAULT) } };
	return pit_main(&p);
}
