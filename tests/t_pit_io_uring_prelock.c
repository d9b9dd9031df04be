/* Pitfall: an io_uring made before lockdown.  Set up before mpk_lockdown():
 * an SQPOLL ring with the secret's page registered as a fixed buffer
 * (inside MPK_WITH).  After lockdown, the attempt only writes a submission
 * into the shared ring and polls for its completion: no system call for
 * the filter to see, and the SQPOLL thread copies from the pinned page.
 * mpk_lockdown() therefore refuses (EBUSY) while an io_uring instance
 * exists. */
#include "t_pit.h"
#include "t_uring.h"

static struct ring r;
static int fds[2], setup_err;

static void setup(void)
{
	if (pipe(fds) || ring_init(&r, IORING_SETUP_SQPOLL, 10000)) {
		setup_err = errno;
		return;
	}
	MPK_WITH(pit_dom, MPK_RW) /* the kernel pins for writing */
		if (ring_register_buffer(&r, pit_secret, 4096))
			setup_err = errno;
}

static int attempt(void)
{
	if (setup_err)
		return pit_copy_outcome(-1, setup_err, NULL);
	return ring_leak_to_pipe(&r, IORING_OP_WRITE_FIXED, 0, fds);
}

int main(void)
{
	struct pit p = { "io_uring made before lock", attempt, setup, MPK_LOCK_ERRNO,
			 { B(O_LEAKED), B(O_LEAKED) }, { B(O_REFUSED), B(O_REFUSED) }, "lockdown: EBUSY while a ring exists",
			 uring_sqpoll_absent };
	return pit_main(&p);
}
