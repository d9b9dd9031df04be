/*
 * Which blocking calls a broadcast interrupts, class by class, as
 * docs/threads-and-fibers.md states.  A broadcast signals only the threads
 * that must change, so:
 *  - a sleeping thread whose rights already match (mpk_set_all() to the
 *    rights it holds) or that never held a key open (mpk_set_all() on, and
 *    destruction of, a domain it never opened) is not signalled: every
 *    call, on every backend, ends normally (no EINTR, its full timeout), and
 *    no signal is sent at all;
 *  - a sleeping thread that must change (mpk_set_all() to other rights) is
 *    signalled on hw: the calls the kernel never restarts (nanosleep,
 *    clock_nanosleep, poll, select, epoll_wait, sem_timedwait, a futex
 *    wait with a timeout) return -1/EINTR, the others are restarted (read
 *    on a pipe, sem_wait, a futex wait without one, pthread_cond_timedwait,
 *    which glibc retries).  On soft nothing is signalled.
 * Each restarted call is checked to have waited for its wake-up.
 */
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <time.h>
#include "t_bcast.h"

#define SLEEP_MS 1000
#define WAKE_MS 300 /* restartable calls are woken up after this */

static mpk_domain *d;
static int fds[2], epfd, fword;
static sem_t sem;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pid_t sleeper_tid; /* atomic */

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static struct timespec in_ms(clockid_t c, int ms)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

/* Each returns the call's result, -1 with errno on failure. */
static int c_nanosleep(void)
{
	struct timespec ts = { SLEEP_MS / 1000, (SLEEP_MS % 1000) * 1000000L };
	return nanosleep(&ts, NULL);
}
static int c_clock_nanosleep(void)
{
	struct timespec ts = in_ms(CLOCK_MONOTONIC, SLEEP_MS);
	int e = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	return e ? (errno = e, -1) : 0;
}
static int c_poll(void)
{
	struct pollfd p = { .fd = fds[0], .events = POLLIN };
	return poll(&p, 1, SLEEP_MS);
}
static int c_select(void)
{
	fd_set r;
	struct timeval tv = { SLEEP_MS / 1000, (SLEEP_MS % 1000) * 1000 };
	FD_ZERO(&r);
	FD_SET(fds[0], &r);
	return select(fds[0] + 1, &r, NULL, NULL, &tv);
}
static int c_epoll_wait(void)
{
	struct epoll_event ev;
	return epoll_wait(epfd, &ev, 1, SLEEP_MS);
}
static int c_sem_timedwait(void)
{
	struct timespec ts = in_ms(CLOCK_REALTIME, SLEEP_MS);
	return sem_timedwait(&sem, &ts);
}
static int c_futex_timed(void)
{
	struct timespec ts = { SLEEP_MS / 1000, (SLEEP_MS % 1000) * 1000000L };
	return (int)syscall(SYS_futex, &fword, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
}
static int c_read_pipe(void)
{
	char c;
	return (int)read(fds[0], &c, 1);
}
static int c_sem_wait(void)
{
	return sem_wait(&sem);
}
static int c_futex(void)
{
	int rc;
	while ((rc = (int)syscall(SYS_futex, &fword, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0)) == 0 &&
	       !__atomic_load_n(&fword, __ATOMIC_ACQUIRE))
		; /* a wake-up that was not ours */
	return rc;
}
static int c_cond_timedwait(void)
{
	struct timespec ts = in_ms(CLOCK_REALTIME, WAKE_MS);
	pthread_mutex_lock(&mu);
	int e = pthread_cond_timedwait(&cv, &mu, &ts);
	pthread_mutex_unlock(&mu);
	return e ? (errno = e, -1) : 0;
}

static void w_pipe(void)
{
	REQUIRE(write(fds[1], "x", 1) == 1);
}
static void w_sem(void)
{
	REQUIRE(sem_post(&sem) == 0);
}
static void w_futex(void)
{
	__atomic_store_n(&fword, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &fword, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static const struct cls {
	const char *name;
	int (*call)(void);
	void (*wake)(void); /* NULL: never restarted on hw, EINTR */
	int woken_rc, woken_errno;
} classes[] = {
	{ "nanosleep", c_nanosleep, NULL, 0, 0 },
	{ "clock_nanosleep", c_clock_nanosleep, NULL, 0, 0 },
	{ "poll", c_poll, NULL, 0, 0 },
	{ "select", c_select, NULL, 0, 0 },
	{ "epoll_wait", c_epoll_wait, NULL, 0, 0 },
	{ "sem_timedwait", c_sem_timedwait, NULL, -1, ETIMEDOUT },
	{ "futex wait, timeout", c_futex_timed, NULL, -1, ETIMEDOUT },
	{ "read (pipe)", c_read_pipe, w_pipe, 1, 0 },
	{ "sem_wait", c_sem_wait, w_sem, 0, 0 },
	{ "futex wait", c_futex, w_futex, 0, 0 },
	{ "pthread_cond_timedwait", c_cond_timedwait, NULL, -1, ETIMEDOUT },
};

static const struct cls *cur;
static int rc, err;
static double took;

static void *sleeper(void *arg)
{
	(void)arg;
	REQUIRE(mpk_set(d, MPK_READ) == 0); /* a thread mpkit knows */
	__atomic_store_n(&sleeper_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	double t0 = now_ms();
	errno = 0;
	rc = cur->call();
	err = errno;
	took = now_ms() - t0;
	return NULL;
}

/* What the other thread does while the sleeper waits. */
static void must_change(void)
{
	for (int i = 0; i < 4; i++) { /* READ -> RW -> READ ... */
		REQUIRE(mpk_set_all(d, i & 1 ? MPK_READ : MPK_RW) == 0);
		usleep(20000);
	}
	REQUIRE(mpk_set_all(d, MPK_READ) == 0);
}

static void holds_already(void)
{
	for (int i = 0; i < 3; i++) { /* the sleeper holds READ already */
		REQUIRE(mpk_set_all(d, MPK_READ) == 0);
		usleep(20000);
	}
	/* A domain the sleeper never opened, closed everywhere and
	 * destroyed: it is left alone. */
	t_unrelated_domain();
}

static void run(const struct cls *c, bool hw, bool change)
{
	pthread_t th;
	uint64_t before[3], after[3];

	cur = c;
	__atomic_store_n(&sleeper_tid, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&fword, 0, __ATOMIC_RELEASE);
	REQUIRE(pthread_create(&th, NULL, sleeper, NULL) == 0);
	pid_t tid;
	while (!(tid = __atomic_load_n(&sleeper_tid, __ATOMIC_ACQUIRE)))
		usleep(1000);
	while (!t_thread_sleeping(tid))
		usleep(1000);
	usleep(20000);
	mpk__broadcast_counters(before);
	if (change)
		must_change();
	else
		holds_already();
	mpk__broadcast_counters(after);
	double woke_at = -1;
	if (c->wake) {
		usleep(WAKE_MS * 1000);
		woke_at = WAKE_MS;
		c->wake();
	}
	REQUIRE(pthread_join(th, NULL) == 0);
	bool eintr = hw && change && !c->wake && c->call != c_cond_timedwait;
	unsigned long long sent = (unsigned long long)(after[0] - before[0]);
	printf("%-13s %-24s rc %d errno %-3d after %4.0f ms, %llu signals (%s)\n",
	       change ? "must change" : "holds already", c->name, rc, err, took, sent,
	       eintr ? "EINTR expected" : "completes");
	if (!change || !hw)
		CHECK(sent == 0); /* nobody else to signal */
	if (eintr) {
		CHECK(rc == -1 && err == EINTR);
		CHECK(took < SLEEP_MS);
	} else if (c->wake) {
		CHECK(rc == c->woken_rc);
		CHECK(took >= woke_at); /* it waited for its wake-up */
	} else {
		CHECK(rc == c->woken_rc && (c->woken_errno == 0 || err == c->woken_errno));
		CHECK(took >= (c->call == c_cond_timedwait ? WAKE_MS : SLEEP_MS) - 20);
	}
}

int main(void)
{
	int backend = t_backend();
	REQUIRE(pipe(fds) == 0);
	REQUIRE((epfd = epoll_create1(0)) >= 0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fds[0] };
	REQUIRE(epoll_ctl(epfd, EPOLL_CTL_ADD, fds[0], &ev) == 0);
	REQUIRE(sem_init(&sem, 0, 0) == 0);
	d = mpk_domain_create("eintr", MPK_RW, 0);
	REQUIRE(d);
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
		run(&classes[i], backend == MPK_BACKEND_HW, false);
		run(&classes[i], backend == MPK_BACKEND_HW, true);
	}
	REQUIRE(mpk_domain_destroy(d) == 0);
	return t_done();
}
