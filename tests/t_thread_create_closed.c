/*
 * mpk_thread_create() inside MPK_WITH: the new thread starts with every
 * domain closed (mpk_get says MPK_NONE) and its read of the domain faults
 * (hw: SEGV_PKUERR with the domain's key, while the creator is still in
 * its scope; soft, where rights are the process's union, once the
 * creator's scope has ended: SEGV_ACCERR), the fault naming the domain and
 * that thread; the creator keeps its rights throughout.  The fault
 * callback then grants the thread MPK_READ and retries, so it runs on.
 * Also its argument checks: EINVAL, nothing started.
 */
#include <pthread.h>
#include <stdbool.h>
#include "t.h"

static mpk_domain *d, *other;
static unsigned char *p;
static pthread_barrier_t bar;
static struct mpk_fault seen;
static int nfaults, start_rights = -2, start_other = -2, read_ok;
static pid_t thread_tid;

static int on_fault(const struct mpk_fault *f, void *arg)
{
	(void)arg;
	if (nfaults++ == 0)
		seen = *f;
	return mpk_set(f->domain, MPK_READ) ? MPK_FAULT_ABORT : MPK_FAULT_RETRY;
}

static void *reader(void *arg)
{
	bool hw = arg != NULL;

	start_rights = mpk_get(d);
	start_other = mpk_get(other);
	thread_tid = (pid_t)syscall(SYS_gettid);
	if (!hw)
		pthread_barrier_wait(&bar); /* soft: the creator left its scope */
	read_ok = p[100] == 0x42;
	if (hw)
		pthread_barrier_wait(&bar); /* hw: read while the creator is inside */
	return (void *)0x1234;
}

int main(void)
{
	bool hw = t_backend() == MPK_BACKEND_HW;
	pthread_t t;
	void *ret = NULL;

	CHECK_ERR(mpk_thread_create(NULL, NULL, reader, NULL), EINVAL);
	CHECK_ERR(mpk_thread_create(&t, NULL, NULL, NULL), EINVAL);

	REQUIRE(d = mpk_domain_create("tc-secret", MPK_RW, 0));
	REQUIRE(other = mpk_domain_create("tc-other", MPK_READ, 0));
	REQUIRE(p = mpk_alloc(d, 4096));
	p[100] = 0x42;
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	REQUIRE(mpk_fault_handler_install(on_fault, NULL) == 0);
	pthread_barrier_init(&bar, NULL, 2);

	MPK_WITH(d, MPK_RW) {
		REQUIRE(mpk_thread_create(&t, NULL, reader, hw ? (void *)1 : NULL) == 0);
		if (hw)
			pthread_barrier_wait(&bar); /* it has read */
		CHECK(mpk_get(d) == MPK_RW);
		CHECK(p[100] == 0x42); /* the creator keeps its rights */
		p[101] = 7;
	}
	if (!hw)
		pthread_barrier_wait(&bar);
	REQUIRE(pthread_join(t, &ret) == 0);
	CHECK(ret == (void *)0x1234);
	CHECK(start_rights == MPK_NONE);
	CHECK(start_other == MPK_NONE); /* every domain, not only the open one */
	CHECK(mpk_get(other) == MPK_READ);
	CHECK(nfaults == 1);
	CHECK(read_ok); /* granted by the callback, the read then completed */
	CHECK(seen.domain == d);
	CHECK(seen.domain_name && !strcmp(seen.domain_name, "tc-secret"));
	CHECK(seen.addr == p + 100);
	CHECK(seen.write == 0);
	CHECK(seen.tid == thread_tid);
	CHECK(seen.rights == MPK_NONE);
	if (hw) {
		CHECK(seen.si_code == SEGV_PKUERR);
		CHECK(seen.pkey == mpk_domain_key(d));
	} else {
		CHECK(seen.si_code == SEGV_ACCERR);
	}
	printf("thread fault: si_code %d, pkey %d, domain %s\n", seen.si_code, seen.pkey,
	       seen.domain_name ? seen.domain_name : "?");
	return t_done();
}
