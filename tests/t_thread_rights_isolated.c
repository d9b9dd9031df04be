/*
 * Rights set in one thread do not change another thread's rights: four
 * threads set different rights to the same domains, then swap them, and
 * each sees only its own in mpk_get().  Both backends (on soft mpk_get() is
 * still per thread though access is the union); on hw each thread's access
 * is also checked against its own rights.
 */
#define _GNU_SOURCE
#include <pthread.h>

#include "t.h"

#define NT 4
#define ND 3

static mpk_domain *dom[ND];
static unsigned char *mem[ND];
static pthread_barrier_t bar;
static const int rights_of[3] = { MPK_NONE, MPK_READ, MPK_RW };
static int hw;

/* What thread t holds to domain i in round r. */
static int want(int t, int i, int r)
{
	return rights_of[(t + i + r) % 3];
}

static void check_access(int i, int rights)
{
	void *p = mem[i] + 16;
	if (rights == MPK_NONE) {
		CHECK_FAULT(t_read_in_child(p), dom[i], p);
	} else if (rights == MPK_READ) {
		CHECK(*(volatile unsigned char *)p == 0xa5);
		CHECK_FAULT(t_write_in_child(p), dom[i], p);
	} else {
		*(volatile unsigned char *)p = 0xa5;
		CHECK_NO_FAULT(t_write_in_child(p));
	}
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;

	for (int r = 0; r < 3; r++) {
		for (int i = 0; i < ND; i++)
			REQUIRE(mpk_set(dom[i], want(t, i, r)) == 0);
		pthread_barrier_wait(&bar); /* everyone has set round r */
		for (int i = 0; i < ND; i++) {
			int got = mpk_get(dom[i]);
			if (got != want(t, i, r))
				t_fail("thread %d round %d domain %d: rights %d, want %d",
				       t, r, i, got, want(t, i, r));
			if (hw)
				check_access(i, got);
		}
		pthread_barrier_wait(&bar); /* everyone has checked */
	}
	return NULL;
}

int main(void)
{
	char name[16];
	pthread_t th[NT];

	hw = t_backend() == MPK_BACKEND_HW;
	for (int i = 0; i < ND; i++) {
		snprintf(name, sizeof(name), "iso-%d", i);
		REQUIRE(dom[i] = mpk_domain_create(name, MPK_RW, 0));
		REQUIRE(mem[i] = mpk_alloc(dom[i], 4096));
		mem[i][16] = 0xa5;
	}
	REQUIRE(pthread_barrier_init(&bar, NULL, NT) == 0);
	for (int t = 1; t < NT; t++)
		REQUIRE(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) == 0);
	worker((void *)0);
	for (int t = 1; t < NT; t++)
		REQUIRE(pthread_join(th[t], NULL) == 0);
	return t_done();
}
