/* SPDX-License-Identifier: MIT */
#include "t_uring.h"

int ring_init(struct ring *r, unsigned flags, unsigned idle_ms)
{
	struct io_uring_params p = { .flags = flags, .sq_thread_idle = idle_ms };
	r->fd = (int)syscall(T_SYS_io_uring_setup, 4, &p);
	if (r->fd < 0)
		return -1;
	r->sqpoll = flags & IORING_SETUP_SQPOLL;
	size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	char *sq = mmap(NULL, sq_len > cq_len ? sq_len : cq_len, PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQ_RING);
	r->sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
	r->map[0] = sq;
	r->map_len[0] = sq_len > cq_len ? sq_len : cq_len;
	r->map[1] = r->sqes;
	r->map_len[1] = p.sq_entries * sizeof(struct io_uring_sqe);
	if (sq == MAP_FAILED || r->sqes == MAP_FAILED || !(p.features & IORING_FEAT_SINGLE_MMAP)) {
		errno = ENOSYS;
		return -1;
	}
	r->sq_tail = (unsigned *)(sq + p.sq_off.tail);
	r->sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
	r->sq_array = (unsigned *)(sq + p.sq_off.array);
	r->sq_flags = (unsigned *)(sq + p.sq_off.flags);
	r->cq_head = (unsigned *)(sq + p.cq_off.head);
	r->cq_tail = (unsigned *)(sq + p.cq_off.tail);
	r->cq_mask = (unsigned *)(sq + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)(sq + p.cq_off.cqes);
	return 0;
}

const char *uring_absent_flags(unsigned flags)
{
	static char why[160];
	struct io_uring_params p = { .flags = flags, .sq_thread_idle = 10 };
	int fd = (int)syscall(T_SYS_io_uring_setup, 1, &p), e = errno;
	char knob[16];

	if (fd >= 0) {
		close(fd);
		return NULL;
	}
	if (e == ENOSYS)
		return "io_uring is not built into this kernel (io_uring_setup: ENOSYS)";
	if (e != EPERM)
		return NULL; /* not the kernel's configuration: let the test see it */
	if (!t_read_file("/proc/sys/kernel/io_uring_disabled", knob, sizeof(knob)))
		strcpy(knob, "absent");
	knob[strcspn(knob, "\n")] = 0;
	snprintf(why, sizeof(why), "io_uring is refused to this process here (io_uring_setup: EPERM; "
		 "kernel.io_uring_disabled: %s%s)", knob,
		 strcmp(knob, "1") && strcmp(knob, "2") ? ", so a security module or seccomp" : "");
	return why;
}

const char *uring_absent(void)
{
	return uring_absent_flags(0);
}

const char *uring_sqpoll_absent(void)
{
	return uring_absent_flags(IORING_SETUP_SQPOLL);
}

void ring_exit(struct ring *r)
{
	munmap(r->map[0], r->map_len[0]);
	munmap(r->map[1], r->map_len[1]);
	close(r->fd);
}

int ring_register_buffer(struct ring *r, void *addr, size_t len)
{
	struct iovec iov = { addr, len };
	return (int)syscall(T_SYS_io_uring_register, r->fd, IORING_REGISTER_BUFFERS, &iov, 1);
}

int ring_do(struct ring *r, int op, unsigned sqe_flags, int fd, const void *addr,
			  unsigned len, int buf_index)
{
	unsigned tail = *r->sq_tail, i = tail & *r->sq_mask;
	struct io_uring_sqe *e = &r->sqes[i];
	memset(e, 0, sizeof(*e));
	e->opcode = (unsigned char)op;
	e->flags = (unsigned char)sqe_flags;
	e->fd = fd;
	e->addr = (uintptr_t)addr;
	e->len = len;
	e->buf_index = (unsigned short)buf_index;
	e->off = (uint64_t)-1; /* the file position: pipes */
	r->sq_array[i] = i;
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
	if (!r->sqpoll || (__atomic_load_n(r->sq_flags, __ATOMIC_ACQUIRE) & IORING_SQ_NEED_WAKEUP)) {
		unsigned f = r->sqpoll ? IORING_ENTER_SQ_WAKEUP : IORING_ENTER_GETEVENTS;
		if (syscall(T_SYS_io_uring_enter, r->fd, r->sqpoll ? 0 : 1, r->sqpoll ? 0 : 1, f,
			    NULL, 0) < 0)
			return -errno;
	}
	unsigned head = *r->cq_head;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE)) {
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (t1.tv_sec - t0.tv_sec > 5)
			return -ETIMEDOUT;
		sched_yield();
	}
	int res = r->cqes[head & *r->cq_mask].res;
	__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
	return res;
}

int uring_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char path[300], name[32] = "";
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		if (t_read_file(path, name, sizeof(name)) > 0 && !strncmp(name, "iou-", 4))
			n++;
	}
	closedir(d);
	return n;
}

int ring_born_open(struct ring *r, int rights, unsigned setup_flags,
				 unsigned sqe_flags)
{
	int res = -ENOTRECOVERABLE;

	MPK_WITH(pit_dom, rights) {
		if (ring_init(r, setup_flags, setup_flags & IORING_SETUP_SQPOLL ? 10000 : 0))
			return pit_copy_outcome(-1, errno, NULL);
		res = ring_do(r, IORING_OP_NOP, sqe_flags, -1, NULL, 0, 0);
	}
	return res < 0 ? pit_error("the ring's first NOP, made with the domain open", -res) : 0;
}

int ring_leak_to_pipe(struct ring *r, int op, unsigned sqe_flags, const int fds[2])
{
	char buf[64] = { 0 };
	int res = ring_do(r, op, sqe_flags, fds[1], pit_secret, sizeof(PIT_SECRET), 0);

	if (res < 0)
		return pit_copy_outcome(-1, -res, NULL);
	if (read(fds[0], buf, sizeof(buf)) < 0)
		return pit_error("read() of the pipe", errno);
	return pit_copy_outcome(0, 0, buf);
}
