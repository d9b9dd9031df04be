/*
 * What one broadcast costs, as a count (timings in the VM mean nothing):
 * with N other threads that have called mpkit and must change, mpk_set_all()
 * sends N signals and makes at most 2N + 5 system calls (a tgkill each, at
 * most one futex wait per answer: how the answers fall between the
 * caller's waits depends on scheduling, and one membarrier), besides what
 * answers slower than the caller's 10 ms wait cost it (a loaded host slows
 * the emulated CPU: the wait times out, the late threads are looked at;
 * counted apart, and left out here), with no /proc
 * scan or status read; with threads that never called mpkit, the first
 * broadcast scans once and the second does not (they registered when they
 * answered).  A third mpk_set_all() to the rights every thread holds
 * already sends no signal at all and skips the N threads.  Each thread
 * then holds the rights (its read succeeds, its write faults: checked by
 * t_set_all_* tests; here its mpk_get()).
 */
#include <pthread.h>
#include <stdbool.h>
#include "t.h"
#include "../src/core/testing.h"

/* The system calls so far, less those slow answers cost. */
static void counters(uint64_t c[3])
{
	uint64_t slow = mpk__broadcast_slow_syscalls();
	mpk__broadcast_counters(c);
	c[1] -= slow;
}

static mpk_domain *d;
static int fds[2];
static int seen[16];

static void *blocked(void *arg)
{
	long i = (long)arg;
	char c;
	if (i >= 0)
		REQUIRE(mpk_init() == 0);
	else
		i = -i - 1;
	while (read(fds[0], &c, 1) < 0)
		;
	seen[i] = mpk_get(d);
	return NULL;
}

static void one(int n, bool known)
{
	pthread_t th[16];
	uint64_t a[3], b[3], c[3], e[3];

	for (long i = 0; i < n; i++)
		REQUIRE(pthread_create(&th[i], NULL, blocked, (void *)(known ? i : -i - 1)) == 0);
	usleep(100000);
	counters(a);
	REQUIRE(mpk_set_all(d, MPK_NONE) == 0);
	counters(b);
	REQUIRE(mpk_set_all(d, MPK_READ) == 0);
	counters(c);
	printf("%2d %s threads: 1st %llu signals %llu syscalls %llu scans; "
	       "2nd %llu signals %llu syscalls %llu scans\n", n, known ? "known  " : "unknown",
	       (unsigned long long)(b[0] - a[0]), (unsigned long long)(b[1] - a[1]),
	       (unsigned long long)(b[2] - a[2]), (unsigned long long)(c[0] - b[0]),
	       (unsigned long long)(c[1] - b[1]), (unsigned long long)(c[2] - b[2]));
	CHECK(b[0] - a[0] == (uint64_t)n);
	CHECK(c[0] - b[0] == (uint64_t)n);
	CHECK(b[2] - a[2] == (known ? 0 : 1));
	CHECK(c[2] - b[2] == 0);
	if (known)
		CHECK(b[1] - a[1] <= 2 * (uint64_t)n + 5);
	CHECK(c[1] - b[1] <= 2 * (uint64_t)n + 5);
	/* Every thread holds READ now: nobody to signal. */
	uint64_t s0 = mpk__broadcast_skipped();
	REQUIRE(mpk_set_all(d, MPK_READ) == 0);
	counters(e);
	uint64_t skipped = mpk__broadcast_skipped() - s0;
	printf("   3rd, READ held already: %llu signals %llu syscalls, %llu threads skipped\n",
	       (unsigned long long)(e[0] - c[0]), (unsigned long long)(e[1] - c[1]),
	       (unsigned long long)skipped);
	CHECK(e[0] - c[0] == 0);
	CHECK(skipped == (uint64_t)n);
	CHECK(e[2] - c[2] == 0);
	for (int i = 0; i < n; i++)
		REQUIRE(write(fds[1], "x", 1) == 1);
	for (int i = 0; i < n; i++) {
		REQUIRE(pthread_join(th[i], NULL) == 0);
		CHECK(seen[i] == MPK_READ);
	}
}

int main(void)
{
	t_need_hw();
	REQUIRE(pipe(fds) == 0);
	d = mpk_domain_create("counts", MPK_RW, 0);
	REQUIRE(d);
	for (int n = 1; n <= 8; n *= 2)
		one(n, true);
	one(4, false);
	REQUIRE(mpk_domain_destroy(d) == 0);
	return t_done();
}
