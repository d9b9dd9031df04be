/*
 * MPK_DOMAIN_SHARED: the rights given at creation apply to every thread,
 * those that already exist (created before the domain) and those created
 * later.  Allowed reads succeed in both; writes fault (READ) in a child
 * forked from each, with the domain's si_code/si_pkey at the address.  A
 * thread may still change its own rights afterwards.
 */
#include <pthread.h>
#include "t.h"

static mpk_domain *d;
static unsigned char *p;
static pthread_barrier_t bar;
static int seen_early = -2, seen_late = -2;

static void *early(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&bar); /* the domain is created meanwhile */
	pthread_barrier_wait(&bar);
	seen_early = mpk_get(d);
	CHECK(p[7] == 7);
	CHECK_FAULT(t_write_in_child(p + 8), d, p + 8);
	return NULL;
}

static void *late(void *arg)
{
	(void)arg;
	seen_late = mpk_get(d);
	CHECK(p[7] == 7);
	CHECK_FAULT(t_write_in_child(p + 9), d, p + 9);
	return NULL;
}

int main(void)
{
	pthread_t t1, t2;
	mpk_domain *w;

	t_backend();
	REQUIRE(pthread_barrier_init(&bar, NULL, 2) == 0);
	REQUIRE(pthread_create(&t1, NULL, early, NULL) == 0);
	pthread_barrier_wait(&bar);
	REQUIRE(w = mpk_domain_create("writer", MPK_RW, 0));
	REQUIRE(d = mpk_domain_create("shared", MPK_READ, MPK_DOMAIN_SHARED));
	REQUIRE(p = mpk_alloc(d, 4096));
	CHECK(mpk_get(d) == MPK_READ);
	/* Fill it through a private RW scope. */
	MPK_WITH(d, MPK_RW) p[7] = 7;
	CHECK(mpk_get(d) == MPK_READ);
	pthread_barrier_wait(&bar);
	REQUIRE(pthread_join(t1, NULL) == 0);
	CHECK(seen_early == MPK_READ);
	REQUIRE(pthread_create(&t2, NULL, late, NULL) == 0);
	REQUIRE(pthread_join(t2, NULL) == 0);
	CHECK(seen_late == MPK_READ);
	CHECK_FAULT(t_write_in_child(p + 10), d, p + 10);
	CHECK(mpk_domain_destroy(d) == 0);
	CHECK(mpk_domain_destroy(w) == 0);
	/* A shared domain closed to all. */
	REQUIRE(d = mpk_domain_create("shared-none", MPK_NONE, MPK_DOMAIN_SHARED));
	REQUIRE(p = mpk_alloc(d, 4096));
	CHECK(mpk_get(d) == MPK_NONE);
	CHECK_FAULT(t_read_in_child(p + 11), d, p + 11);
	return t_done();
}
