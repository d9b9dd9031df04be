/* Pitfall: io_uring's io-wq workers, the other way: a worker born while
 * the domain was open reads from a pipe into the closed secret
 * (IORING_OP_READ, IOSQE_ASYNC).  WRITTEN if the secret changed.  After
 * lockdown io_uring_setup fails with EPERM. */
#include "t_pit.h"
#include "t_uring.h"

static int attempt(void)
{
	struct ring r;
	int fds[2], res;
	static const char junk[] = "OVERWRITTEN-by-io_uring-worker";

	if (pipe(fds))
		return O_ERROR;
	if ((res = ring_born_open(&r, MPK_RW, 0, IOSQE_ASYNC)))
		return res;
	if (write(fds[1], junk, sizeof(junk)) != sizeof(junk))
		return O_ERROR;
	res = ring_do(&r, IORING_OP_READ, IOSQE_ASYNC, fds[0], pit_secret, sizeof(junk), 0);
	if (res < 0)
		return pit_copy_outcome(-1, -res, NULL);
	char now[sizeof(PIT_SECRET)];
	MPK_WITH(pit_dom, MPK_READ)
		memcpy(now, pit_secret, sizeof(now));
	return pit_is_secret(now) ? O_KEPT : O_WRITTEN;
}

int main(void)
{
	struct pit p = { "io_uring async read into", attempt, NULL, MPK_LOCK_ERRNO,
			 { B(O_EFAULT), B(O_EFAULT) }, { B(O_EPERM), B(O_EPERM) }, NULL,
			 uring_absent };
	return pit_main(&p);
}
