/*
 * Vaults' per-thread lists, both backends: eight threads allocate, write,
 * check, free and open/close secrets of three sizes at once; every secret
 * handed out reads zero (a freed block is wiped, also when another thread
 * takes it again), no two threads ever share one (each finds its own
 * pattern intact), and a freed secret reads zero at once while it sits in
 * a list.  Secrets freed by a thread that did not allocate them, a second
 * free of a listed block from another thread (a double free), open/close
 * of a listed block (EINVAL), a fork while blocks are listed (the child's
 * secrets read zero and work), and threads that exit with blocks listed:
 * after the last secret is freed the domain can be destroyed.
 */
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "t_heap.h"

#define NT 8
#define ROUNDS 300
#define PER 6

static mpk_domain *d;
static const size_t sizes[3] = { 32, 64, 200 };
static unsigned char *handed[NT][PER]; /* freed by the next thread */
static pthread_barrier_t bar;
static int bad[NT];

static bool all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static void *worker(void *arg)
{
	int me = (int)(intptr_t)arg;
	unsigned char *s[PER];

	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < PER; i++)
			if (!(s[i] = mpk_secret_alloc(d, sizes[i % 3])))
				bad[me]++;
		if (bad[me])
			break;
		if (mpk_secret_readwrite(s[0]))
			bad[me]++;
		for (int i = 0; i < PER; i++) {
			if (!all_zero(s[i], sizes[i % 3]))
				bad[me]++; /* not wiped, or handed out twice */
			memset(s[i], 0x40 + me, sizes[i % 3]);
		}
		if (mpk_secret_noaccess(s[0]) || mpk_secret_readonly(s[1]))
			bad[me]++;
		for (int i = 0; i < PER; i++)
			for (size_t k = 0; k < sizes[i % 3]; k++)
				if (s[i][k] != 0x40 + me)
					bad[me]++; /* another thread wrote it */
		if (mpk_secret_noaccess(s[1]))
			bad[me]++;
		for (int i = 0; i < PER; i++)
			if (mpk_secret_free(s[i]))
				bad[me]++;
	}
	/* Blocks for the next thread to free, and some left in this
	 * thread's list when it exits. */
	for (int i = 0; i < PER; i++)
		handed[me][i] = mpk_secret_alloc(d, sizes[i % 3]);
	pthread_barrier_wait(&bar);
	for (int i = 0; i < PER; i++)
		if (mpk_secret_free(handed[(me + 1) % NT][i]))
			bad[me]++;
	return NULL;
}

static void forked(void *arg)
{
	unsigned char *freed = arg;
	unsigned char *k = mpk_secret_alloc(d, 32);

	CHECK(k != NULL);
	if (!k)
		return;
	MPK_WITH(d, MPK_RW) {
		CHECK(all_zero(k, 32) && all_zero(freed, 32));
		memset(k, 0x77, 32);
	}
	CHECK(mpk_secret_free(k) == 0);
	CHECK(mpk_secret_free(k) == -1);
}

static void *free_again(void *arg)
{
	errno = 0;
	return (void *)(intptr_t)(mpk_secret_free(arg) == -1 && errno == EINVAL);
}

int main(void)
{
	pthread_t th[NT];

	t_backend();
	t_need_memlock(2 << 20);
	REQUIRE(d = mpk_domain_create("vault-lists", MPK_NONE, 0));
	REQUIRE(pthread_barrier_init(&bar, NULL, NT) == 0);
	for (int i = 0; i < NT; i++)
		REQUIRE(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i) == 0);
	for (int i = 0; i < NT; i++) {
		REQUIRE(pthread_join(th[i], NULL) == 0);
		if (bad[i])
			t_fail("thread %d: %d failures", i, bad[i]);
	}
	CHECK(mpk_get(d) == MPK_NONE);

	/* Freed: in this thread's list, and zero there at once. */
	unsigned char *k = mpk_secret_alloc(d, 32), *keep = mpk_secret_alloc(d, 64);
	REQUIRE(k && keep);
	MPK_WITH(d, MPK_RW) {
		memset(k, 0x5a, 32);
	}
	CHECK(mpk_secret_free(k) == 0);
	MPK_WITH(d, MPK_READ) {
		CHECK(all_zero(k, 32));
	}
	CHECK_ERR(mpk_secret_readonly(k), EINVAL);
	CHECK(mpk_get(d) == MPK_NONE);

	/* A second free of a listed block, from another thread. */
	t_misuse_catch();
	pthread_t t2;
	void *ok = NULL;
	REQUIRE(pthread_create(&t2, NULL, free_again, k) == 0);
	REQUIRE(pthread_join(t2, &ok) == 0);
	CHECK(ok == (void *)1);
	CHECK_MISUSE(MPK_MISUSE_DOUBLE_FREE, k);
	CHECK(t_misuse.heap == NULL && t_misuse.domain == d);

	/* Fork with blocks listed: the child's secrets work and read zero. */
	struct t_child c = t_child(forked, k, T_CHILD_CHECKS);
	CHECK(c.exit_code == 0);
	t_child_free(&c);

	/* Live: the domain stays; listed blocks do not hold it. */
	CHECK_ERR(mpk_domain_destroy(d), EBUSY);
	CHECK(mpk_secret_free(keep) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	pthread_barrier_destroy(&bar);
	return t_done();
}
