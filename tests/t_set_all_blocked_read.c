/*
 * mpk_set_all(d, MPK_NONE) reaches a thread blocked in read(): once it
 * wakes, its next access to d faults (fault callback: the domain, the
 * address, SEGV_PKUERR with d's key on hw, SEGV_ACCERR on soft), and its
 * read() itself completed normally (the signal did not break it).  Before
 * the close the same access succeeded.
 */
#include <pthread.h>
#include "t.h"

static mpk_domain *d;
static unsigned char *p;
static int fds[2];
static int blocked; /* atomic */
static struct {
	int calls;
	struct mpk_fault f;
	int set_rc;
} cb;
static int rights_after_wake = -2;
static ssize_t got = -2;
static unsigned char byte;

static int on_fault(const struct mpk_fault *f, void *arg)
{
	(void)arg;
	if (cb.calls++ > 3)
		return MPK_FAULT_ABORT;
	cb.f = *f;
	cb.set_rc = mpk_set(f->domain, MPK_RW);
	return MPK_FAULT_RETRY;
}

static void *reader(void *arg)
{
	(void)arg;
	REQUIRE(mpk_set(d, MPK_RW) == 0);
	p[5] = 55; /* allowed now */
	__atomic_store_n(&blocked, 1, __ATOMIC_RELEASE);
	got = read(fds[0], &byte, 1);
	rights_after_wake = mpk_get(d);
	p[6] = 66; /* faults: closed while it slept */
	return NULL;
}

static pid_t reader_tid; /* atomic */
static void *reader_wrap(void *arg)
{
	__atomic_store_n(&reader_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	return reader(arg);
}

int main(void)
{
	pthread_t t;

	t_backend();
	REQUIRE(pipe(fds) == 0);
	REQUIRE(d = mpk_domain_create("blocked", MPK_NONE, 0));
	REQUIRE(p = mpk_alloc(d, 4096));
	REQUIRE(mpk_fault_handler_install(on_fault, NULL) == 0);
	REQUIRE(pthread_create(&t, NULL, reader_wrap, NULL) == 0);
	pid_t tid = 0;
	for (int i = 0; i < 5000; i++) {
		tid = __atomic_load_n(&reader_tid, __ATOMIC_ACQUIRE);
		if (__atomic_load_n(&blocked, __ATOMIC_ACQUIRE) && tid && t_thread_sleeping(tid))
			break;
		usleep(1000);
	}
	usleep(20000); /* in read() now */
	REQUIRE(t_thread_sleeping(tid));
	CHECK(cb.calls == 0);
	REQUIRE(mpk_set_all(d, MPK_NONE) == 0);
	CHECK(mpk_get(d) == MPK_NONE);
	REQUIRE(write(fds[1], "x", 1) == 1);
	REQUIRE(pthread_join(t, NULL) == 0);
	CHECK(got == 1 && byte == 'x');
	CHECK(rights_after_wake == MPK_NONE);
	CHECK(cb.calls == 1);
	CHECK(cb.f.domain == d);
	CHECK(cb.f.addr == (void *)(p + 6));
	CHECK(cb.f.write == 1);
	CHECK(cb.f.tid == reader_tid);
	CHECK(cb.f.rights == MPK_NONE);
	CHECK(cb.set_rc == 0);
	if (mpk_backend() == MPK_BACKEND_HW) {
		CHECK(cb.f.si_code == SEGV_PKUERR);
		CHECK(cb.f.pkey == mpk_domain_key(d));
	} else {
		CHECK(cb.f.si_code == SEGV_ACCERR);
	}
	REQUIRE(mpk_set(d, MPK_READ) == 0);
	CHECK(p[5] == 55 && p[6] == 66);
	return t_done();
}
