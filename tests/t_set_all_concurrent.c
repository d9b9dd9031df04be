/*
 * Two threads issue process-wide changes to two different domains at the
 * same time, many rounds; a third thread only watches.  After each round
 * every thread holds exactly the rights each call set (no update is lost
 * or undone by the other), and the allowed accesses succeed.
 */
#include <pthread.h>
#include "t.h"

#define ROUNDS 400
static mpk_domain *dom[2];
static unsigned char *mem[2];
static pthread_barrier_t bar;
static const int seq[] = { MPK_RW, MPK_NONE, MPK_READ, MPK_NONE, MPK_RW, MPK_READ };
static int errors[3];

static int want(int who, int round)
{
	return seq[(round + 3 * who) % 6];
}

static void check_all(int self, int round)
{
	for (int k = 0; k < 2; k++) {
		int w = want(k, round);
		if (mpk_get(dom[k]) != w) {
			if (errors[self]++ < 5)
				fprintf(stderr, "thread %d round %d domain %d: rights %d want %d\n",
					self, round, k, mpk_get(dom[k]), w);
		} else if (w != MPK_NONE) {
			t_touch_read(mem[k] + 64 * self);
			if (w == MPK_RW)
				mem[k][64 * self + round % 64] = (unsigned char)round;
		}
	}
}

static void *run(void *arg)
{
	int self = (int)(intptr_t)arg;
	for (int r = 0; r < ROUNDS; r++) {
		if (self < 2 && mpk_set_all(dom[self], want(self, r)))
			errors[self]++;
		pthread_barrier_wait(&bar);
		check_all(self, r);
		pthread_barrier_wait(&bar);
	}
	return NULL;
}

int main(void)
{
	pthread_t t[3];

	t_backend();
	REQUIRE(dom[0] = mpk_domain_create("all-0", MPK_NONE, 0));
	REQUIRE(dom[1] = mpk_domain_create("all-1", MPK_NONE, 0));
	REQUIRE(mem[0] = mpk_alloc(dom[0], 4096));
	REQUIRE(mem[1] = mpk_alloc(dom[1], 4096));
	REQUIRE(pthread_barrier_init(&bar, NULL, 3) == 0);
	for (int i = 0; i < 3; i++)
		REQUIRE(pthread_create(&t[i], NULL, run, (void *)(intptr_t)i) == 0);
	for (int i = 0; i < 3; i++)
		REQUIRE(pthread_join(t[i], NULL) == 0);
	for (int i = 0; i < 3; i++)
		CHECK(errors[i] == 0);
	/* The main thread was reached by every call too. */
	CHECK(mpk_get(dom[0]) == want(0, ROUNDS - 1));
	CHECK(mpk_get(dom[1]) == want(1, ROUNDS - 1));
	struct mpk_stats s;
	REQUIRE(mpk_stats_get(&s) == 0);
	if (mpk_backend() == MPK_BACKEND_HW)
		CHECK(s.broadcasts >= 2 * ROUNDS);
	return t_done();
}
