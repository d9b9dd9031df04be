/* SPDX-License-Identifier: MIT */
/*
 * An agent: a thread that runs mpkit rights calls on command and answers
 * each one, so a test can hold rights in several threads and know exactly
 * when each change has happened (pipes, no sleeps).
 */
#ifndef MPK_TEST_AGENT_H
#define MPK_TEST_AGENT_H

#include <pthread.h>

#include "t.h"

enum { T_AG_QUIT, T_AG_SET, T_AG_GET, T_AG_ENTER, T_AG_LEAVE, T_AG_RUN };

struct t_agent {
	pthread_t thread;
	int cmd[2], ack[2];
	mpk_scope scopes[8]; /* the agent's own enter/leave stack */
	int depth;
};

struct t_agent_cmd {
	int op;
	mpk_domain *d;
	int rights;
	int (*fn)(void *); /* T_AG_RUN: rc = fn(arg) */
	void *arg;
};

void t_agent_start(struct t_agent *a);

/* Run one command in the agent and return its result. */
int t_agent(struct t_agent *a, int op, mpk_domain *d, int rights);

/* Run fn(arg) in the agent's thread and return what it returns. */
int t_agent_run(struct t_agent *a, int (*fn)(void *), void *arg);

/* Let the agent's thread exit (holding whatever it holds) and join it. */
void t_agent_stop(struct t_agent *a);

#endif
