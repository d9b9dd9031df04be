/*
 * hw stress: threads opening a domain while it is evicted, while its
 * rights change process-wide, and while the key of a domain they hold open
 * is revoked, with broadcasts that skip the threads that need no change.
 * WORKERS threads keep entering MPK_WITH(X, READ) and reading X; main
 * forces evictions (4 keys, more domains, opened in turn) and calls
 * mpk_set_all(X, READ) meanwhile (never taking a right a scope needs).  Each
 * generation main creates Y, every worker opens it (READ) and reads it;
 * main destroys Y (its key revoked: the workers hold it open, so each is
 * signalled), creates Z (which may get Y's old key) and every worker checks
 * that a read of Z faults.  A lost right faults inside a scope (the test
 * dies); a right kept too long reads Z.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include "t_bcast.h"

#define WORKERS 3
#define GENS 6
#define KEYS "4" /* X, Y and two more: the fillers evict X when it ages */
#define FILLERS 6
#define CHURN 24

static mpk_domain *X, *Y, *Z;
static unsigned char *px, *py, *pz;
static int y_gen, z_gen, stop;           /* atomic */
static int ack_y[WORKERS], ack_z[WORKERS]; /* atomic */

static void *worker(void *arg)
{
	int me = (int)(long)arg, my_y = 0, my_z = 0;
	unsigned i = 0, sum = 0;

	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		MPK_WITH(X, MPK_READ) {
			sum += px[i++ & 4095];
		}
		if (i % 64 == 0)
			usleep(500); /* X ages: it may be the one evicted */
		int g = __atomic_load_n(&y_gen, __ATOMIC_ACQUIRE);
		if (g != my_y) {
			REQUIRE(mpk_set(Y, MPK_READ) == 0);
			CHECK(py[0] == (unsigned char)g);
			my_y = g;
			__atomic_store_n(&ack_y[me], g, __ATOMIC_RELEASE);
		}
		g = __atomic_load_n(&z_gen, __ATOMIC_ACQUIRE);
		if (g != my_z) {
			CHECK_FAULT(t_read_in_child(pz), Z, pz);
			my_z = g;
			__atomic_store_n(&ack_z[me], g, __ATOMIC_RELEASE);
		}
	}
	CHECK(sum == 0); /* X holds zeros */
	return NULL;
}

static void wait_acks(int *acks, int g)
{
	for (int w = 0; w < WORKERS; w++)
		while (__atomic_load_n(&acks[w], __ATOMIC_ACQUIRE) != g)
			usleep(1000);
}

int main(void)
{
	mpk_domain *f[FILLERS];
	pthread_t th[WORKERS];
	unsigned long evictions = 0;

	setenv("MPKIT_KEYS", KEYS, 1);
	t_need_hw();
	REQUIRE(X = mpk_domain_create("X", MPK_NONE, 0));
	REQUIRE(px = mpk_alloc(X, 4096));
	for (int i = 0; i < FILLERS; i++) {
		REQUIRE(f[i] = mpk_domain_create("filler", MPK_NONE, 0));
		REQUIRE(mpk_alloc(f[i], 4096));
	}
	for (long w = 0; w < WORKERS; w++)
		REQUIRE(pthread_create(&th[w], NULL, worker, (void *)w) == 0);

	for (int g = 1; g <= GENS; g++) {
		REQUIRE(Y = mpk_domain_create("Y", MPK_RW, 0));
		REQUIRE(py = mpk_alloc(Y, 4096));
		py[0] = (unsigned char)g;
		__atomic_store_n(&y_gen, g, __ATOMIC_RELEASE);
		wait_acks(ack_y, g);
		for (int j = 0; j < CHURN; j++) {
			mpk_domain *v = f[j % FILLERS];
			int had = mpk_domain_key(X);
			REQUIRE(mpk_set(v, MPK_RW) == 0);
			REQUIRE(mpk_set(v, MPK_NONE) == 0);
			evictions += had >= 0 && mpk_domain_key(X) < 0;
			if (j % 6 == 0)
				REQUIRE(mpk_set_all(X, MPK_READ) == 0);
		}
		REQUIRE(mpk_set(Y, MPK_NONE) == 0);
		bool keyed = mpk_domain_key(Y) > 0;
		uint64_t s = t_signals_sent();
		REQUIRE(mpk_domain_destroy(Y) == 0);
		if (keyed) /* every worker held its key open */
			CHECK(t_signals_sent() - s >= WORKERS);
		REQUIRE(Z = mpk_domain_create("Z", MPK_RW, 0));
		REQUIRE(pz = mpk_alloc(Z, 4096));
		pz[0] = 1;
		__atomic_store_n(&z_gen, g, __ATOMIC_RELEASE);
		wait_acks(ack_z, g);
		REQUIRE(mpk_domain_destroy(Z) == 0);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int w = 0; w < WORKERS; w++)
		REQUIRE(pthread_join(th[w], NULL) == 0);
	printf("%d generations, %lu evictions of X seen\n", GENS, evictions);
	for (int i = 0; i < FILLERS; i++)
		REQUIRE(mpk_domain_destroy(f[i]) == 0);
	REQUIRE(mpk_domain_destroy(X) == 0);
	return t_done();
}
