/*
 * hw: io_uring's kernel threads (an SQPOLL thread, iou-sqp-PID, and an
 * io-wq worker, iou-wrk-PID) are threads of the process that never run
 * user code and never answer a signal.  A broadcast must not wait for
 * them: mpk_set_all() succeeds (not EAGAIN after the grace period), every
 * user thread gets the rights.  Those kernel threads keep whatever PKRU
 * they have (an SQPOLL thread born in a scope keeps the scope's rights:
 * t_pit_io_uring_sqpoll), so mpk_domain_destroy() does not pretend to give
 * the key back: it stays held, out of circulation (keys_in_use still
 * counts it), until they are gone; then the next domain gets it, and its
 * destroy gives it back (keys_in_use drops to what it was).
 */
#include <pthread.h>
#include "t.h"
#include "t_uring.h"

static mpk_domain *d;
static unsigned char *p;
static pthread_barrier_t bar;
static int seen;

static void *other(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&bar); /* set_all done */
	seen = mpk_get(d);
	pthread_barrier_wait(&bar);
	return NULL;
}

/* The rings belong to a thread of their own: io-wq workers live with the
 * task that submitted (its io_uring context), so they go when it exits. */
static struct ring sq, wq;
static int ring_cmd[2], ring_ans[2];

static void *ring_owner(void *arg)
{
	char c = 0;
	int ok;

	(void)arg;
	ok = !ring_init(&sq, IORING_SETUP_SQPOLL, 60000) && !ring_init(&wq, 0, 0) &&
	     ring_do(&sq, IORING_OP_NOP, 0, -1, NULL, 0, 0) == 0 &&
	     ring_do(&wq, IORING_OP_NOP, IOSQE_ASYNC, -1, NULL, 0, 0) == 0;
	REQUIRE(write(ring_ans[1], &ok, sizeof(ok)) == (ssize_t)sizeof(ok));
	REQUIRE(read(ring_cmd[0], &c, 1) == 1); /* told to go */
	if (ok) {
		ring_exit(&sq);
		ring_exit(&wq);
	}
	return NULL;
}

static int keys_in_use(void)
{
	struct mpk_info i;
	REQUIRE(mpk_info(&i) == 0);
	return i.keys_in_use;
}

int main(void)
{
	pthread_t t, owner;
	int ok = 0;

	t_need_hw();
	const char *why = uring_sqpoll_absent();
	if (why)
		t_skip(why);
	int held = keys_in_use();
	REQUIRE(d = mpk_domain_create("iou", MPK_NONE, 0));
	REQUIRE(p = mpk_alloc(d, 4096));
	CHECK(keys_in_use() == held + 1);
	REQUIRE(pipe(ring_cmd) == 0 && pipe(ring_ans) == 0);
	REQUIRE(pthread_create(&owner, NULL, ring_owner, NULL) == 0);
	REQUIRE(read(ring_ans[0], &ok, sizeof(ok)) == (ssize_t)sizeof(ok));
	REQUIRE(ok);
	int n = uring_threads();
	printf("io_uring kernel threads: %d\n", n);
	REQUIRE(n >= 1);
	pthread_barrier_init(&bar, NULL, 2);
	REQUIRE(pthread_create(&t, NULL, other, NULL) == 0);

	if (mpk_set_all(d, MPK_READ))
		t_fail("mpk_set_all with io_uring threads: %s", strerror(errno));
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar);
	CHECK(seen == MPK_READ);
	CHECK(mpk_get(d) == MPK_READ);
	CHECK(mpk_set_all(d, MPK_NONE) == 0);
	struct t_fault f = t_read_in_child(p);
	CHECK_FAULT(f, d, p);
	pthread_join(t, NULL);

	int key = mpk_domain_key(d);
	CHECK(mpk_domain_destroy(d) == 0);
	CHECK(keys_in_use() == held + 1); /* held back: the ring's threads live */
	CHECK(uring_threads() >= 1);

	REQUIRE(write(ring_cmd[1], "q", 1) == 1);
	pthread_join(owner, NULL);
	for (int i = 0; i < 1000 && uring_threads() > 0; i++)
		usleep(10000);
	REQUIRE(uring_threads() == 0);
	mpk_domain *e = mpk_domain_create("iou-next", MPK_NONE, 0);
	REQUIRE(e);
	CHECK(mpk_domain_key(e) == key); /* the held key, revoked now */
	CHECK(keys_in_use() == held + 1);
	CHECK(mpk_domain_destroy(e) == 0);
	CHECK(keys_in_use() == held); /* given back */
	return t_done();
}
