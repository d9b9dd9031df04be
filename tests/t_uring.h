/* SPDX-License-Identifier: MIT */
/*
 * A minimal io_uring over raw system calls for the pitfall tests: a ring
 * (optionally SQPOLL: a kernel thread, iou-sqp-PID, takes submissions from
 * the shared ring with no system call), one operation at a time, and
 * registered buffers.
 */
#ifndef MPK_TEST_URING_H
#define MPK_TEST_URING_H

#include "t_pit.h"

#include <dirent.h>
#include <linux/io_uring.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include <time.h>

#define T_SYS_io_uring_setup 425
#define T_SYS_io_uring_enter 426
#define T_SYS_io_uring_register 427

struct ring {
	int fd;
	bool sqpoll;
	unsigned *sq_tail, *sq_mask, *sq_array, *sq_flags, *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
	void *map[2];
	size_t map_len[2];
};

/* A ring of 4 entries; flags as io_uring_setup's (IORING_SETUP_SQPOLL:
 * the kernel thread stays awake for idle_ms after each submission). */
int ring_init(struct ring *r, unsigned flags, unsigned idle_ms);

/* Why this kernel gives this process no io_uring (with setup flags, e.g.
 * IORING_SETUP_SQPOLL), or NULL: not built in (ENOSYS), or turned off by
 * the kernel.io_uring_disabled sysctl (EPERM). */
const char *uring_absent_flags(unsigned flags);

const char *uring_absent(void);

const char *uring_sqpoll_absent(void);

/* The ring gone: descriptor and mappings (its threads exit soon after). */
void ring_exit(struct ring *r);

/* Register [addr, addr+len) as fixed buffer 0 (the kernel pins its pages
 * now, checking the caller's access to them). */
int ring_register_buffer(struct ring *r, void *addr, size_t len);

/* Submit one operation (sqe_flags: IOSQE_ASYNC sends it to an io-wq
 * worker) and wait for it: its result (-errno), or -ETIMEDOUT after 5 s.
 * An SQPOLL ring makes no system call when its thread is awake. */
int ring_do(struct ring *r, int op, unsigned sqe_flags, int fd, const void *addr,
			  unsigned len, int buf_index);

/* io_uring's kernel threads in this process (io-wq workers, the SQPOLL
 * thread), by name: iou-wrk-*, iou-sqp-*. */
int uring_threads(void);

/* A ring whose kernel thread is born while pit_dom is open to rights:
 * made inside MPK_WITH, with a NOP (sqe_flags IOSQE_ASYNC: an io-wq
 * worker; setup_flags IORING_SETUP_SQPOLL: the SQPOLL thread).  0, or the
 * outcome of the failure. */
int ring_born_open(struct ring *r, int rights, unsigned setup_flags,
				 unsigned sqe_flags);

/* The pitfalls' last step: op (IORING_OP_WRITE, or IORING_OP_WRITE_FIXED
 * from buffer 0) copies pit_secret into the pipe fds; what came out of the
 * pipe, classified (pit_copy_outcome). */
int ring_leak_to_pipe(struct ring *r, int op, unsigned sqe_flags, const int fds[2]);

#endif
