/* Pitfall: io_uring.  Its kernel workers are threads of the process with a
 * PKRU of their own, copied when they are created: a worker born while the
 * domain was open (here: an async NOP inside MPK_WITH) still copies from it
 * after the domain is closed.  The row records what the kernel does with a
 * later async write from the secret to a pipe.  On soft the page is
 * PROT_NONE: EFAULT.  After lockdown io_uring_setup fails with EPERM. */
#include <linux/io_uring.h>
#include "t_pit.h"

struct ring {
	int fd;
	unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
};

static int ring_init(struct ring *r)
{
	struct io_uring_params p = { 0 };
	r->fd = (int)syscall(425 /* io_uring_setup */, 4, &p);
	if (r->fd < 0)
		return -1;
	size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	char *sq = mmap(NULL, sq_len > cq_len ? sq_len : cq_len, PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQ_RING);
	r->sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
	if (sq == MAP_FAILED || r->sqes == MAP_FAILED || !(p.features & IORING_FEAT_SINGLE_MMAP)) {
		errno = ENOSYS;
		return -1;
	}
	r->sq_tail = (unsigned *)(sq + p.sq_off.tail);
	r->sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
	r->sq_array = (unsigned *)(sq + p.sq_off.array);
	r->cq_head = (unsigned *)(sq + p.cq_off.head);
	r->cq_tail = (unsigned *)(sq + p.cq_off.tail);
	r->cq_mask = (unsigned *)(sq + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)(sq + p.cq_off.cqes);
	return 0;
}

/* Submit one async operation and wait for it: its result. */
static int ring_do(struct ring *r, int op, int fd, const void *addr, unsigned len)
{
	unsigned tail = *r->sq_tail, i = tail & *r->sq_mask;
	struct io_uring_sqe *e = &r->sqes[i];
	memset(e, 0, sizeof(*e));
	e->opcode = (unsigned char)op;
	e->flags = IOSQE_ASYNC; /* to a worker */
	e->fd = fd;
	e->addr = (uintptr_t)addr;
	e->len = len;
	r->sq_array[i] = i;
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
	if (syscall(426 /* io_uring_enter */, r->fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0)
		return -errno;
	unsigned head = *r->cq_head;
	while (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE))
		;
	int res = r->cqes[head & *r->cq_mask].res;
	__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
	return res;
}

static int attempt(void)
{
	struct ring r;
	int fds[2], res = 0;
	char buf[64] = { 0 };

	if (pipe(fds))
		return O_ERROR;
	MPK_WITH(pit_dom, MPK_READ) {
		if (ring_init(&r))
			return pit_copy_outcome(-1, errno, buf);
		res = ring_do(&r, IORING_OP_NOP, -1, NULL, 0); /* a worker is born */
	}
	if (res < 0)
		return O_ERROR;
	res = ring_do(&r, IORING_OP_WRITE, fds[1], pit_secret, sizeof(PIT_SECRET));
	if (res < 0)
		return pit_copy_outcome(-1, -res, buf);
	if (read(fds[0], buf, sizeof(buf)) < 0)
		return O_ERROR;
	return pit_copy_outcome(0, 0, buf);
}

int main(void)
{
	struct pit p = { "io_uring worker's PKRU", attempt, NULL, MPK_LOCK_ERRNO,
			 { B(O_LEAKED) | B(O_EFAULT), B(O_EFAULT) }, { B(O_EPERM), B(O_EPERM) }, NULL };
	return pit_main(&p);
}
