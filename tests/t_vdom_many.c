/*
 * Virtual domains: 1,002 domains, far more than keys, each one page, used
 * by 3 threads at random (each thread owns a third of them): enter RW and
 * write, enter READ and read, hold READ across steps, leave.  After every
 * step the domain's page is compared with a shadow copy (contents survive
 * every eviction and re-keying), every few steps a forbidden access (rights
 * NONE) must fault at the address touched (SEGV_PKUERR with a key while the
 * domain holds one, SEGV_ACCERR while it is keyless), and at the end every
 * domain is checked once more.  hw in the VM (keys are a cache), soft
 * natively (the same answers).
 */
#include <pthread.h>
#include "t.h"

#define ND 1002
#define NT 3
#define PAGE 4096

static mpk_domain *d[ND];
static unsigned char *m[ND];
static unsigned char shadow[ND][PAGE];
static int steps = 400;
static int errors[NT], faults_checked[NT];

static unsigned rnd(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

static int same(int i)
{
	return memcmp(m[i], shadow[i], PAGE) == 0;
}

static void *run(void *arg)
{
	int t = (int)(intptr_t)arg;
	unsigned seed = 12345u + 7919u * (unsigned)t;
	int held = -1;

	for (int s = 0; s < steps; s++) {
		int i = (int)(rnd(&seed) % (ND / NT)) * NT + t;
		int op = (int)(rnd(&seed) % 8);
		if (op < 4) {
			mpk_scope sc = mpk_enter(d[i], MPK_RW);
			if (sc.saved < 0) {
				errors[t]++;
				continue;
			}
			unsigned off = rnd(&seed) % PAGE;
			unsigned char v = (unsigned char)rnd(&seed);
			m[i][off] = v;
			shadow[i][off] = v;
			if (!same(i))
				errors[t]++;
			if (mpk_leave(&sc))
				errors[t]++;
		} else if (op < 6) {
			MPK_WITH(d[i], MPK_READ) {
				if (!same(i))
					errors[t]++;
			}
		} else if (op == 6) {
			if (held >= 0 && mpk_set(d[held], MPK_NONE))
				errors[t]++;
			held = i;
			if (mpk_set(d[i], MPK_READ) || !same(i))
				errors[t]++;
		} else if (i != held) {
			if (mpk_get(d[i]) != MPK_NONE) {
				errors[t]++;
				continue;
			}
			unsigned off = rnd(&seed) % PAGE;
			struct t_fault f = t_read_in_child(m[i] + off);
			faults_checked[t]++;
			if (!f.faulted || f.where != (void *)(m[i] + off) ||
			    !(f.code == SEGV_ACCERR || (f.code == SEGV_PKUERR && f.pkey > 0 && f.pkey < 16))) {
				fprintf(stderr, "thread %d domain %d: no proper fault (faulted %d code %d pkey %d)\n",
					t, i, f.faulted, f.code, f.pkey);
				errors[t]++;
			}
		}
		if (held >= 0 && mpk_get(d[held]) != MPK_READ)
			errors[t]++;
	}
	if (held >= 0 && mpk_set(d[held], MPK_NONE))
		errors[t]++;
	return NULL;
}

int main(void)
{
	pthread_t th[NT];
	struct mpk_info in;

	int hw = t_backend() == MPK_BACKEND_HW;
	if (getenv("T_VDOM_STEPS"))
		steps = atoi(getenv("T_VDOM_STEPS"));
	for (int i = 0; i < ND; i++) {
		char name[32];
		snprintf(name, sizeof(name), "v%d", i);
		REQUIRE(d[i] = mpk_domain_create(name, MPK_NONE, 0));
		REQUIRE(m[i] = mpk_alloc(d[i], PAGE));
	}
	REQUIRE(mpk_info(&in) == 0);
	CHECK(in.domains == ND);
	if (hw)
		CHECK(in.keys_in_use <= in.key_budget);
	for (int t = 0; t < NT; t++)
		REQUIRE(pthread_create(&th[t], NULL, run, (void *)(intptr_t)t) == 0);
	for (int t = 0; t < NT; t++)
		REQUIRE(pthread_join(th[t], NULL) == 0);
	for (int t = 0; t < NT; t++) {
		CHECK(errors[t] == 0);
		CHECK(faults_checked[t] > 0);
	}
	/* Every domain, once more, from the main thread. */
	int bad = 0;
	for (int i = 0; i < ND; i++) {
		if (mpk_get(d[i]) != MPK_NONE)
			bad++;
		MPK_WITH(d[i], MPK_READ) {
			if (!same(i))
				bad++;
		}
	}
	CHECK(bad == 0);
	REQUIRE(mpk_info(&in) == 0);
	if (hw)
		CHECK(in.keys_in_use >= 1 && in.keys_in_use <= in.key_budget);
	struct mpk_stats st;
	REQUIRE(mpk_stats_get(&st) == 0);
	printf("%d domains, %d keys in use, %d steps x %d threads, %llu broadcasts, %llu mprotect calls\n",
	       ND, in.keys_in_use, steps, NT, (unsigned long long)st.broadcasts,
	       (unsigned long long)st.mprotect_calls);
	for (int i = 0; i < ND; i++)
		CHECK(mpk_domain_destroy(d[i]) == 0);
	return t_done();
}
