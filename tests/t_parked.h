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

#endif
