/*
 * A thread parked inside a signal handler, for tests of what a key move
 * (eviction, revocation, mpk_set_all) does to a thread that is in one.
 *   t_park_start(before, after): a thread runs before() (take rights),
 *     then waits;
 *   t_park_enter(): it gets SIGUSR1 and blocks inside the handler (whose
 *     PKRU is the kernel's default: only key 0 open);
 *   t_park_release(): the handler returns, the thread runs after() (check
 *     its rights) and ends; joined here.
 * t_park.in_handler, if set, runs in the handler first (rights changes made
 * there, with the handler's PKRU).
 */
#ifndef MPK_TEST_PARKED_H
#define MPK_TEST_PARKED_H

#include <pthread.h>
#include "t.h"

struct t_park_state {
	pthread_t th;
	int ready[2], in[2], release[2], go[2];
	void (*before)(void), (*after)(void), (*in_handler)(void);
};
extern struct t_park_state t_park;

void t_park_start(void (*before)(void), void (*after)(void));

void t_park_enter(void);

void t_park_release(void);

/*
 * After a thread holding RW to A came back from a handler during which
 * mpk_set_all(C, MPK_READ) ran and B (RW in the caller) took a key from
 * an eviction (t_hw_evict_in_nodefer_handler, t_hw_evict_at_handler_return):
 * the calling thread still holds RW to A (reads pa[1], writes pa[2]),
 * READ to C (reads pc[3], a write to pc[4] faults), none to B (a read of
 * pb[5] faults naming B).
 */
void t_park_check_abc(mpk_domain *a, unsigned char *pa, mpk_domain *b, unsigned char *pb,
		      mpk_domain *c, unsigned char *pc);

#endif
