/*
 * Soft backend: a rights change takes the domain's own lock, not mpkit's
 * global one.
 *  1. The global lock held (by this test, as a long create or destroy
 *     would): another thread still opens a domain, writes its page (the
 *     allowed access succeeds), closes it again (a child then faults on
 *     it).  Before, the change waited for the global lock (timeout here).
 *  2. d's own lock held: a change to d waits, one to e does not.
 *  3. Four threads change their own domain (READ <-> RW) while another
 *     allocates and frees regions of those domains: the new regions get
 *     the union (each is readable at once), every page a thread holds RW
 *     to takes its write (TSan: no race between the two locks' users).
 */
#include <pthread.h>
#include <stdatomic.h>
#include "internal.h"
#include "t.h"

static mpk_domain *a, *b;
static unsigned char *pa;
static atomic_int done_a, done_b;

static bool wait_for(atomic_int *flag, int ms)
{
	for (int i = 0; i < ms && !atomic_load(flag); i++)
		usleep(1000);
	return atomic_load(flag);
}

static void *open_write_close(void *arg)
{
	(void)arg;
	CHECK(mpk_set(a, MPK_RW) == 0);
	pa[1] = 7; /* allowed: succeeds */
	CHECK(mpk_set(a, MPK_NONE) == 0);
	atomic_store(&done_a, 1);
	return NULL;
}

static void *set_one(void *arg)
{
	CHECK(mpk_set(arg, MPK_RW) == 0);
	atomic_store(arg == a ? &done_a : &done_b, 1);
	return NULL;
}

#define NW 4
#define ROUNDS 300
static mpk_domain *dw[NW];
static unsigned char *pw[NW];
static atomic_int stop;

static void *toggler(void *arg)
{
	int i = (int)(long)arg;
	for (int k = 0; k < ROUNDS; k++) {
		REQUIRE(mpk_set(dw[i], k % 2 ? MPK_READ : MPK_RW) == 0);
		if (k % 2 == 0)
			pw[i][k % 4096] = (unsigned char)k; /* RW held: writes */
		else
			t_touch_read(pw[i] + k % 4096);
	}
	REQUIRE(mpk_set(dw[i], MPK_READ) == 0);
	return NULL;
}

static void *allocator(void *arg)
{
	(void)arg;
	for (int k = 0; !atomic_load(&stop); k++) {
		mpk_domain *d = dw[k % NW];
		unsigned char *p = mpk_alloc(d, 4096);
		REQUIRE(p);
		t_touch_read(p); /* every toggler holds READ at least */
		REQUIRE(mpk_free(d, p) == 0);
	}
	return NULL;
}

int main(void)
{
	pthread_t t, u, w[NW + 1];

	t_force_soft();
	REQUIRE(a = mpk_domain_create("lock-a", MPK_NONE, 0));
	REQUIRE(b = mpk_domain_create("lock-b", MPK_NONE, 0));
	REQUIRE(pa = mpk_alloc(a, 4096));

	/* 1 */
	pthread_mutex_lock(&mpk_g.lock);
	REQUIRE(pthread_create(&t, NULL, open_write_close, NULL) == 0);
	bool ran = wait_for(&done_a, 5000);
	pthread_mutex_unlock(&mpk_g.lock);
	REQUIRE(pthread_join(t, NULL) == 0);
	CHECK(ran);
	CHECK_FAULT(t_read_in_child(pa + 2), a, pa + 2);
	MPK_WITH(a, MPK_READ)
		CHECK(pa[1] == 7);

	/* 2 */
	atomic_store(&done_a, 0);
	mpk__lock(&a->lock);
	REQUIRE(pthread_create(&t, NULL, set_one, a) == 0);
	REQUIRE(pthread_create(&u, NULL, set_one, b) == 0);
	CHECK(wait_for(&done_b, 5000));
	CHECK(!wait_for(&done_a, 50)); /* waits for a's lock */
	mpk__unlock(&a->lock);
	REQUIRE(pthread_join(t, NULL) == 0 && pthread_join(u, NULL) == 0);
	CHECK(atomic_load(&done_a));

	/* 3 */
	for (int i = 0; i < NW; i++) {
		char name[16];
		snprintf(name, sizeof(name), "lock-w%d", i);
		REQUIRE(dw[i] = mpk_domain_create(name, MPK_READ, 0));
		REQUIRE(pw[i] = mpk_alloc(dw[i], 4096));
	}
	REQUIRE(pthread_create(&w[NW], NULL, allocator, NULL) == 0);
	for (int i = 0; i < NW; i++)
		REQUIRE(pthread_create(&w[i], NULL, toggler, (void *)(long)i) == 0);
	for (int i = 0; i < NW; i++)
		REQUIRE(pthread_join(w[i], NULL) == 0);
	atomic_store(&stop, 1);
	REQUIRE(pthread_join(w[NW], NULL) == 0);
	return t_done();
}
