/*
 * Windows grow while other threads look addresses up: each new window is
 * published so that a concurrent mpk_domain_of() never misses a live
 * region nor names a wrong domain, in the old windows or the new ones.
 * Big carved units fill windows quickly; a mapped region in each new window
 * is looked up by the readers as soon as it exists.
 */
#include <pthread.h>

#include "t_window.h"

#define READERS 2
#define MAXR 64

static mpk_domain *d;
static void *reg[MAXR];
static int nreg; /* published with release */
static int stop, errors;
static long looked;

static void *reader(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		int n = __atomic_load_n(&nreg, __ATOMIC_ACQUIRE);
		for (int i = 0; i < n; i++) {
			unsigned char *p = reg[i];
			if (mpk_domain_of(p) != d || mpk_domain_of(p + t_page() - 1) != d ||
			    mpk_domain_of(p + t_page()) != NULL)
				__atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
			__atomic_add_fetch(&looked, 1, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

int main(void)
{
	pthread_t t[READERS];
	const size_t big = (size_t)8 << 30; /* 8 GiB: eight fill a window */
	void *carved[40];
	int nc = 0;

	t_backend();
	REQUIRE((d = mpk_domain_create("grow", MPK_RW, 0)));
	REQUIRE((reg[0] = mpk_alloc(d, 1)));
	__atomic_store_n(&nreg, 1, __ATOMIC_RELEASE);
	int w0 = t_windows();
	CHECK(w0 >= 1);
	for (int i = 0; i < READERS; i++)
		REQUIRE(pthread_create(&t[i], NULL, reader, NULL) == 0);
	while (t_windows() < w0 + 3 && nc < 40) {
		int before = t_windows();
		REQUIRE((carved[nc++] = mpk__window_carve(big, 0)));
		if (t_windows() > before && nreg < MAXR) {
			void *p = mpk_alloc(d, 1);
			REQUIRE(p);
			reg[nreg] = p;
			__atomic_store_n(&nreg, nreg + 1, __ATOMIC_RELEASE);
			CHECK(mpk_domain_of(p) == d);
		}
	}
	CHECK(t_windows() >= w0 + 3);
	CHECK(nreg >= 3);
	/* Let the readers see every region. */
	long l0 = __atomic_load_n(&looked, __ATOMIC_RELAXED);
	while (__atomic_load_n(&looked, __ATOMIC_RELAXED) < l0 + 100 * nreg)
		sched_yield();
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < READERS; i++)
		pthread_join(t[i], NULL);
	CHECK(errors == 0);
	for (int i = 0; i < nreg; i++)
		CHECK(t_listed(reg[i], t_page(), MPK_RANGE_WINDOW));
	for (int i = 0; i < nc; i++)
		mpk__window_uncarve(carved[i], big);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
