/*
 * Many rights changes at once: four threads each make 200 mixed mpk_set /
 * mpk_enter / mpk_leave calls on four domains (scopes nest, also across
 * domains and on one domain), checking mpk_get() as they go; then, while
 * all hold their final rights, each checks every domain again.  On hw each
 * thread's access matches its own rights; on soft each domain's protection
 * is the union of what the threads hold.  Once every thread has unwound
 * and dropped its rights, the domains are closed again.  Both backends.
 */
#define _GNU_SOURCE
#include <pthread.h>

#include "t.h"

#define NT 4
#define ND 4
#define OPS 200
#define DEPTH 24

static mpk_domain *dom[ND];
static unsigned char *mem[ND];
static int expect[NT][ND]; /* each thread's rights; read by main at barriers */
static pthread_barrier_t bar; /* NT threads + main */
static int hw;

static const int rights_of[3] = { MPK_NONE, MPK_READ, MPK_RW };

static unsigned next(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 16;
}

static void check_one(int t, int i, const char *when)
{
	int got = mpk_get(dom[i]);
	if (got != expect[t][i])
		t_fail("thread %d %s: domain %d rights %d, want %d", t, when, i,
		       got, expect[t][i]);
}

static void check_access(int t, int i)
{
	unsigned char *p = mem[i] + 64 * t;
	switch (expect[t][i]) {
	case MPK_RW:
		*(volatile unsigned char *)p = (unsigned char)t;
		break;
	case MPK_READ:
		(void)*(volatile unsigned char *)p;
		CHECK_FAULT(t_write_in_child(p), dom[i], p);
		break;
	case MPK_NONE:
		CHECK_FAULT(t_read_in_child(p), dom[i], p);
		break;
	}
}

/* Leave the innermost scope of thread t: its rights go back to what the
 * scope saved.  Returns the domain's index. */
static int leave_top(int t, mpk_scope *s)
{
	int j = 0;
	while (dom[j] != s->domain)
		j++;
	int saved = s->saved;
	REQUIRE(mpk_leave(s) == 0);
	expect[t][j] = saved;
	return j;
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	unsigned seed = 0x9e3779b9u * (unsigned)(t + 1);
	mpk_scope stack[DEPTH];
	int depth = 0, sets = 0, enters = 0, leaves = 0;

	for (int i = 0; i < ND; i++)
		check_one(t, i, "at start");
	for (int op = 0; op < OPS; op++) {
		int i = (int)(next(&seed) % ND);
		int r = rights_of[next(&seed) % 3];
		switch (next(&seed) % 3) {
		case 0:
			REQUIRE(mpk_set(dom[i], r) == 0);
			expect[t][i] = r;
			sets++;
			break;
		case 1:
			if (depth < DEPTH) {
				stack[depth] = mpk_enter(dom[i], r);
				REQUIRE(stack[depth].domain == dom[i]);
				CHECK(stack[depth].saved == expect[t][i]);
				depth++;
				expect[t][i] = r;
				enters++;
				break;
			}
			/* fall through */
		case 2:
			if (depth) {
				i = leave_top(t, &stack[--depth]);
				leaves++;
			}
			break;
		}
		check_one(t, i, "after a change");
	}
	CHECK(sets > 20 && enters > 20 && leaves > 20);

	pthread_barrier_wait(&bar); /* 1: all threads hold their final rights */
	for (int i = 0; i < ND; i++) {
		check_one(t, i, "after all threads changed theirs");
		if (hw)
			check_access(t, i);
	}
	pthread_barrier_wait(&bar); /* 2: main checked the union */

	while (depth) {
		int j = leave_top(t, &stack[--depth]);
		check_one(t, j, "unwinding");
	}
	for (int i = 0; i < ND; i++) {
		REQUIRE(mpk_set(dom[i], MPK_NONE) == 0);
		expect[t][i] = MPK_NONE;
	}
	return NULL;
}

/* soft: a domain is as open as the most any thread holds. */
static void check_union(void)
{
	for (int i = 0; i < ND; i++) {
		int u = MPK_NONE;
		for (int t = 0; t < NT; t++)
			u |= expect[t][i];
		void *p = mem[i] + 4000;
		if (u == MPK_NONE)
			CHECK_FAULT(t_read_in_child(p), dom[i], p);
		else
			CHECK_NO_FAULT(t_read_in_child(p));
		if (u == MPK_RW)
			CHECK_NO_FAULT(t_write_in_child(p));
		else
			CHECK_FAULT(t_write_in_child(p), dom[i], p);
	}
}

static void scenario(void)
{
	pthread_t th[NT];
	char name[16];

	hw = t_backend() == MPK_BACKEND_HW;
	for (int i = 0; i < ND; i++) {
		snprintf(name, sizeof(name), "scale-%d", i);
		REQUIRE(dom[i] = mpk_domain_create(name, MPK_NONE, 0));
		REQUIRE(mem[i] = mpk_alloc(dom[i], 4096));
	}
	REQUIRE(pthread_barrier_init(&bar, NULL, NT + 1) == 0);
	for (int t = 0; t < NT; t++)
		REQUIRE(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) == 0);
	pthread_barrier_wait(&bar); /* 1 */
	if (!hw)
		check_union();
	pthread_barrier_wait(&bar); /* 2 */
	for (int t = 0; t < NT; t++)
		REQUIRE(pthread_join(th[t], NULL) == 0);

	/* Everyone let go: closed again (main never opened them). */
	for (int i = 0; i < ND; i++) {
		CHECK(mpk_get(dom[i]) == MPK_NONE);
		CHECK_FAULT(t_read_in_child(mem[i]), dom[i], mem[i]);
	}
	for (int i = 0; i < ND; i++)
		CHECK(mpk_domain_destroy(dom[i]) == 0);
}

int main(void)
{
	return t_both_backends(scenario);
}
