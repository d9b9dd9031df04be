/* mpk_info() running in a thread while another thread destroys a domain
 * the first had open must not undo the revocation: a domain created next
 * (which may get the same key) is closed to that thread (hw only). */
#include <pthread.h>

#include "t_state.h"

#define ROUNDS 150

static pthread_barrier_t bar;
static mpk_domain *old, *next;
static volatile int stop;
static int rights_after[ROUNDS];

static void *holder(void *arg)
{
	struct mpk_info i;
	(void)arg;
	for (int n = 0; n < ROUNDS; n++) {
		pthread_barrier_wait(&bar); /* 1: old created */
		REQUIRE(mpk_set(old, MPK_RW) == 0);
		pthread_barrier_wait(&bar); /* 2: main destroys old now */
		while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE))
			REQUIRE(mpk_info(&i) == 0);
		pthread_barrier_wait(&bar); /* 3: next created */
		rights_after[n] = mpk_get(next);
		pthread_barrier_wait(&bar); /* 4: result ready */
	}
	return NULL;
}

int main(void)
{
	pthread_t t;
	int open_after = 0, same_key = 0;

	t_need_hw();
	REQUIRE(pthread_barrier_init(&bar, NULL, 2) == 0);
	REQUIRE(pthread_create(&t, NULL, holder, NULL) == 0);
	for (int n = 0; n < ROUNDS; n++) {
		old = mpk_domain_create("revoked", MPK_NONE, 0);
		REQUIRE(old);
		int key = mpk_domain_key(old);
		__atomic_store_n(&stop, 0, __ATOMIC_RELEASE);
		pthread_barrier_wait(&bar); /* 1 */
		pthread_barrier_wait(&bar); /* 2 */
		CHECK(mpk_domain_destroy(old) == 0);
		next = mpk_domain_create("next", MPK_RW, 0);
		REQUIRE(next);
		same_key += mpk_domain_key(next) == key;
		__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
		pthread_barrier_wait(&bar); /* 3 */
		pthread_barrier_wait(&bar); /* 4 */
		if (rights_after[n] != MPK_NONE)
			open_after++;
		CHECK(mpk_domain_destroy(next) == 0);
	}
	REQUIRE(pthread_join(t, NULL) == 0);
	if (open_after)
		t_fail("%d of %d rounds: a thread calling mpk_info() during a "
		       "destroy had rights to the next domain", open_after, ROUNDS);
	printf("%d of %d rounds reused the key\n", same_key, ROUNDS);
	return t_done();
}
