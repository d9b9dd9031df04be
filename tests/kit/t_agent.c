/* SPDX-License-Identifier: MIT */
#include "t_agent.h"

static void *t_agent_main(void *arg)
{
	struct t_agent *a = arg;
	struct t_agent_cmd c;
	int rc;

	while (read(a->cmd[0], &c, sizeof(c)) == (ssize_t)sizeof(c) &&
	       c.op != T_AG_QUIT) {
		switch (c.op) {
		case T_AG_SET:
			rc = mpk_set(c.d, c.rights);
			break;
		case T_AG_GET:
			rc = mpk_get(c.d);
			break;
		case T_AG_ENTER:
			rc = -1;
			if (a->depth < 8) {
				a->scopes[a->depth] = mpk_enter(c.d, c.rights);
				rc = a->scopes[a->depth++].saved;
			}
			break;
		case T_AG_LEAVE:
			rc = a->depth > 0 ? mpk_leave(&a->scopes[--a->depth]) : -1;
			break;
		case T_AG_RUN:
			rc = c.fn(c.arg);
			break;
		default:
			rc = -1;
		}
		if (write(a->ack[1], &rc, sizeof(rc)) != (ssize_t)sizeof(rc))
			break;
	}
	return NULL;
}

void t_agent_start(struct t_agent *a)
{
	memset(a, 0, sizeof(*a));
	REQUIRE(pipe(a->cmd) == 0 && pipe(a->ack) == 0);
	REQUIRE(pthread_create(&a->thread, NULL, t_agent_main, a) == 0);
}

int t_agent(struct t_agent *a, int op, mpk_domain *d, int rights)
{
	struct t_agent_cmd c = { op, d, rights, NULL, NULL };
	int rc;

	REQUIRE(write(a->cmd[1], &c, sizeof(c)) == (ssize_t)sizeof(c));
	REQUIRE(read(a->ack[0], &rc, sizeof(rc)) == (ssize_t)sizeof(rc));
	return rc;
}

int t_agent_run(struct t_agent *a, int (*fn)(void *), void *arg)
{
	struct t_agent_cmd c = { T_AG_RUN, NULL, 0, fn, arg };
	int rc;

	REQUIRE(write(a->cmd[1], &c, sizeof(c)) == (ssize_t)sizeof(c));
	REQUIRE(read(a->ack[0], &rc, sizeof(rc)) == (ssize_t)sizeof(rc));
	return rc;
}

void t_agent_stop(struct t_agent *a)
{
	struct t_agent_cmd c = { T_AG_QUIT, NULL, 0, NULL, NULL };

	REQUIRE(write(a->cmd[1], &c, sizeof(c)) == (ssize_t)sizeof(c));
	REQUIRE(pthread_join(a->thread, NULL) == 0);
	close(a->cmd[0]);
	close(a->cmd[1]);
	close(a->ack[0]);
	close(a->ack[1]);
}
