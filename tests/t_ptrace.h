/* SPDX-License-Identifier: MIT */
/* The revoke tests watch one thread of a child from outside, with ptrace:
 * what signals reach it, and when. */
#ifndef MPK_TEST_PTRACE_H
#define MPK_TEST_PTRACE_H

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <sys/ptrace.h>

#include "t.h"

/*
 * Fork a child that runs child() and writes the tid of the thread to watch
 * to the pipe read by rd; seize that thread.  Skips the test (killing the
 * child) where ptrace is not permitted.  Returns the child's pid, the
 * thread's in *tid.
 */
pid_t t_fork_seize(int (*child)(void), int rd, pid_t *tid);

/* The domain d2 that got a revoked key: this thread holds no rights to it,
 * and a read of p2 from a child forked here faults. */
#define CHECK_NO_STALE_RIGHTS(d2, p2)                                            \
	do {                                                                     \
		if (mpk_get(d2) != MPK_NONE)                                     \
			t_fail("this thread holds rights %d to the new domain on " \
			       "the revoked key %d", mpk_get(d2), mpk_domain_key(d2)); \
		CHECK_FAULT(t_read_in_child(p2), d2, p2);                        \
	} while (0)

/* Whether tid has a signal pending for itself (a revoke is thread-directed). */
int t_has_pending(pid_t pid, pid_t tid);

/* Let tid go, passing on each signal it stops with (sig first), until it
 * exits: whether one of them was a real-time signal (a broadcast's).
 * *first_ip, if first_ip is not NULL: where tid stood at its first stop,
 * if that was for a real-time signal (else 0). */
int t_pass_signals(pid_t tid, int sig, uintptr_t *first_ip);

/*
 * A revoke that arrives while a thread is being handed a SIGSEGV: in a
 * child, thread T holds RW to domain d (key k) and, once traced, makes an
 * access that faults (fault(), which also checks what follows it; setup()
 * installed the handler first).  The tracer (the parent) holds T's SIGSEGV
 * until main's destroy of d has signalled T too, then lets both go: the
 * kernel sets up the SIGSEGV frame and delivers the revoke on top of it,
 * before the handler's first instruction (unless the handler blocks it).
 * Then main creates d2, which gets key k again: once its handler has
 * returned, T must hold no rights to it.
 */
struct t_rof_state {
	void (*fault)(void);
	mpk_domain *d, *d2;
	unsigned char *p2;
	int go_check; /* atomic */
	int to_parent[2], from_parent[2], to_main[2];
};
extern struct t_rof_state t_rof;

void *t_rof_thread(void *arg);

int t_rof_child(void);

/* The scenario above, from the parent: the test's main. */
int t_revoke_on_fault_entry(void (*setup)(void), void (*fault)(void));

#endif
