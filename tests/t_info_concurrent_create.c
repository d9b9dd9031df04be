/* mpk_info() in one thread never makes mpk_domain_create() in another
 * fail: counting the free keys must not take the last key from under
 * mpkit's own allocation (hw only: on soft no call takes keys). */
#include <pthread.h>

#include "t_state.h"

#define ROUNDS 200 /* creates at least */
#define INFOS 50   /* mpk_info() calls alongside at least (each reads /proc; slow in the VM) */
#define LIMIT 20000

static volatile int stop;
static int infos, info_errors;

static void *asker(void *arg)
{
	struct mpk_info i;
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		if (mpk_info(&i))
			info_errors++;
		__atomic_add_fetch(&infos, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

int main(void)
{
	struct mpk_info i;
	mpk_domain *held[16];
	pthread_t t;
	int failed = 0, first_errno = 0, spare = 0, n;

	t_need_hw();
	/* Take all free keys but one: then each create needs exactly the
	 * key that mpk_info() keeps probing. */
	REQUIRE(mpk_info(&i) == 0);
	if (i.keys_free < 2 || i.key_budget < i.keys_free)
		t_skip("needs two free keys within the budget");
	int nheld = i.keys_free - 1;
	for (n = 0; n < nheld; n++)
		REQUIRE((held[n] = mpk_domain_create("held", MPK_NONE, 0)));

	REQUIRE(pthread_create(&t, NULL, asker, NULL) == 0);
	for (n = 0; n < LIMIT && (n < ROUNDS ||
				  __atomic_load_n(&infos, __ATOMIC_ACQUIRE) < INFOS); n++) {
		mpk_domain *d = mpk_domain_create("contended", MPK_RW, 0);
		if (!d) {
			int e = errno;
			/* More keys held than live domains: a destroy could
			 * not revoke its key in every thread and keeps it as
			 * a spare.  That is the broadcast's doing, not
			 * mpk_info()'s: noted, not counted here. */
			struct mpk_info j;
			REQUIRE(mpk_info(&j) == 0);
			if (j.keys_in_use > j.domains) {
				spare++;
				continue;
			}
			if (!failed++)
				first_errno = e;
			continue;
		}
		CHECK(mpk_domain_destroy(d) == 0);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	REQUIRE(pthread_join(t, NULL) == 0);
	int rounds = n;
	if (failed)
		t_fail("%d of %d creates failed while another thread called "
		       "mpk_info() (first errno %d: %s)", failed, rounds, first_errno,
		       strerror(first_errno));
	CHECK(infos >= INFOS);
	if (spare)
		fprintf(stderr, "note: %d creates failed with a key held spare "
			"after a failed revocation broadcast\n", spare);
	CHECK(info_errors == 0);
	for (n = 0; n < nheld; n++)
		CHECK(mpk_domain_destroy(held[n]) == 0);
	CHECK(t_domains() == 0);
	printf("%d creates, %d mpk_info() calls alongside\n", rounds, infos);
	return t_done();
}
