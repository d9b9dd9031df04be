/*
 * hw: two threads at the same moment, one with the vault open and one
 * without.  While the first holds it open and reads the secret, the second
 * touches it and faults (SEGV_PKUERR, the domain's key, the secret's
 * address, reported to the fault callback in that thread, which then opens
 * the vault for itself and retries); the first never faults and closes
 * again when its scope ends.
 */
#include <pthread.h>

#include "t_heap.h"

static mpk_domain *d;
static unsigned char *key;
static pthread_barrier_t bar;
static int faults, fault_pkey, fault_write;
static pid_t fault_tid;
static void *fault_addr;
static int a_ok, b_ok, b_rights_after;
static pid_t b_tid;

static int on_fault(const struct mpk_fault *f, void *arg)
{
	(void)arg;
	faults++;
	fault_tid = f->tid;
	fault_pkey = f->pkey;
	fault_addr = f->addr;
	fault_write = f->write;
	if (f->domain != d || f->rights != MPK_NONE)
		return MPK_FAULT_ABORT;
	if (mpk_set(d, MPK_READ)) /* this thread only, then try again */
		return MPK_FAULT_ABORT;
	return MPK_FAULT_RETRY;
}

static void *opened(void *arg)
{
	(void)arg;
	MPK_WITH(d, MPK_READ) {
		pthread_barrier_wait(&bar);     /* 1: open now */
		a_ok = ((volatile unsigned char *)key)[0] == 0x42;
		pthread_barrier_wait(&bar);     /* 2: the other one has read */
		a_ok &= ((volatile unsigned char *)key)[31] == 0x42;
	}
	a_ok &= mpk_get(d) == MPK_NONE;
	return NULL;
}

static void *closed(void *arg)
{
	(void)arg;
	b_tid = (pid_t)syscall(SYS_gettid);
	pthread_barrier_wait(&bar);             /* 1 */
	b_ok = mpk_get(d) == MPK_NONE;
	b_ok &= ((volatile unsigned char *)key)[9] == 0x42; /* faults, then reads */
	b_rights_after = mpk_get(d);
	pthread_barrier_wait(&bar);             /* 2 */
	return NULL;
}

int main(void)
{
	pthread_t a, b;

	t_need_hw();
	t_need_memlock(1 << 20);
	REQUIRE(d = mpk_domain_create("vault-threads", MPK_NONE, 0));
	REQUIRE(key = mpk_secret_alloc(d, 32));
	MPK_WITH(d, MPK_RW) {
		memset(key, 0x42, 32);
	}
	REQUIRE(mpk_fault_handler_install(on_fault, NULL) == 0);
	REQUIRE(pthread_barrier_init(&bar, NULL, 2) == 0);
	REQUIRE(pthread_create(&a, NULL, opened, NULL) == 0);
	REQUIRE(pthread_create(&b, NULL, closed, NULL) == 0);
	REQUIRE(pthread_join(a, NULL) == 0 && pthread_join(b, NULL) == 0);

	CHECK(a_ok);
	CHECK(b_ok);
	CHECK(faults == 1);
	CHECK(fault_tid == b_tid);
	CHECK(fault_pkey == mpk_domain_key(d));
	CHECK(fault_addr == key + 9 && !fault_write);
	CHECK(b_rights_after == MPK_READ);
	CHECK(mpk_get(d) == MPK_NONE); /* this thread never opened it */
	REQUIRE(mpk_fault_handler_remove() == 0);
	CHECK(mpk_secret_free(key) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
