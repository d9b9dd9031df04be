/* After lockdown the daemon's own work goes on: rights changes, mpk_alloc,
 * heaps that grow, vaults, a thread started before, a new domain, the fault
 * report of a stray read, mpk_free and destroy; and sealed memory
 * (MPK_LOCK_SEAL, where the kernel has mseal) refuses to go away. */
#include <pthread.h>
#include "t_pit.h"

static mpk_domain *d;
static unsigned char *k;
static pthread_barrier_t go, done;
static int thread_ok;

static void *worker(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&go);
	MPK_WITH(d, MPK_READ) thread_ok = pit_is_secret(k);
	pthread_barrier_wait(&done);
	return NULL;
}

static void stray(void *p)
{
	mpk_fault_handler_install(NULL, NULL);
	t_touch_read(p);
}

static void daemon_work(unsigned flags)
{
	pthread_t t;

	d = mpk_domain_create("keys", MPK_RW, 0);
	REQUIRE(d);
	k = mpk_alloc(d, 4096);
	REQUIRE(k);
	memcpy(k, PIT_SECRET, sizeof(PIT_SECRET));
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h);
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	pthread_barrier_init(&go, NULL, 2);
	pthread_barrier_init(&done, NULL, 2);
	REQUIRE(pthread_create(&t, NULL, worker, NULL) == 0);

	t_segv_recorder_install(); /* for t_run_child() after the lockdown */
	REQUIRE(mpk_lockdown(flags) == 0);
	CHECK(mpk_lockdown_flags() == (int)flags);

	for (int i = 0; i < 1000; i++)
		MPK_WITH(d, MPK_READ) CHECK(pit_is_secret(k));
	CHECK(mpk_get(d) == MPK_NONE);
	unsigned char *more = mpk_alloc(d, 3 * 4096);
	CHECK(more != NULL);
	MPK_WITH(d, MPK_RW) more[5000] = 7;
	void *blocks[300];
	for (int i = 0; i < 300; i++) /* past a chunk: the heap grows */
		CHECK((blocks[i] = mpk_heap_malloc(h, 8000)) != NULL);
	for (int i = 0; i < 300; i++)
		mpk_heap_free(h, blocks[i]);
	unsigned char *s = mpk_secret_alloc(d, 32);
	CHECK(s != NULL);
	MPK_WITH(d, MPK_RW) memset(s, 1, 32);
	mpk_secret_free(s);
	pthread_barrier_wait(&go);
	pthread_barrier_wait(&done);
	pthread_join(t, NULL);
	CHECK(thread_ok);
	mpk_domain *e = mpk_domain_create("late", MPK_RW, 0);
	CHECK(e != NULL);
	void *ep = mpk_alloc(e, 4096);
	CHECK(ep != NULL);
	REQUIRE(mpk_set(e, MPK_NONE) == 0);
	CHECK_FAULT(t_read_in_child(ep), e, ep);
	struct t_fault f = t_run_child(stray, k);
	CHECK(f.faulted || f.exit_code == -SIGABRT); /* reported, then abort */
	CHECK(mpk_free(e, ep) == 0);
	CHECK(mpk_domain_destroy(e) == 0);
	if (flags & MPK_LOCK_SEAL) {
		/* hw with mseal: k's region is sealed, so it stays */
		if (mpk_domain_key(d) >= 0 && mpk_free(d, k) == -1) {
			CHECK(errno == EPERM);
			CHECK_ERR(mpk_domain_destroy(d), EBUSY);
			CHECK(munmap(k, 4096) == -1);
		}
	} else {
		CHECK(mpk_free(d, more) == 0);
	}
	CHECK_ERR(mpk_lockdown(flags), EALREADY);
	t_exit_locked();
}

static void plain(void)
{
	daemon_work(MPK_LOCK_ERRNO);
}

static void sealed(void)
{
	daemon_work(MPK_LOCK_ERRNO | MPK_LOCK_SEAL | MPK_LOCK_FREEZE_KEYS);
}

int main(void)
{
	t_need_lockdown(MPK_LOCK_ERRNO);
	t_in_child(plain, "daemon after lockdown");
	t_in_child(sealed, "daemon after a sealed lockdown");
	return t_done();
}
