/*
 * hw: creating a shared domain when pkey_alloc() fails (ENOSPC injected
 * through the test-only hook mpk__test_fail() in src/core/os.c) still works
 * (virtual domains: it evicts the least recently used domain that can go
 * exactly, or stays keyless): every thread, existing or later, sees the
 * rights; the other domain keeps its contents, rights and protection.
 */
#include <pthread.h>
#include "t.h"
#include "../src/core/testing.h"

static mpk_domain *s;
static unsigned char *ps;
static int other_sees = -2;
static pthread_barrier_t bar;

static void *other(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar);
	other_sees = mpk_get(s);
	ps[3] = 3;
	return NULL;
}

int main(void)
{
	mpk_domain *w;
	unsigned char *p;
	pthread_t t;

	t_need_hw();
	REQUIRE(pthread_barrier_init(&bar, NULL, 2) == 0);
	REQUIRE(pthread_create(&t, NULL, other, NULL) == 0);
	REQUIRE(w = mpk_domain_create("witness", MPK_READ, MPK_DOMAIN_SHARED));
	REQUIRE(p = mpk_alloc(w, 4096));
	MPK_WITH(w, MPK_RW) p[0] = 9;
	pthread_barrier_wait(&bar);
	mpk__test_fail(MPK_OS_FAIL_PKEY_ALLOC, 1, ENOSPC);
	REQUIRE(s = mpk_domain_create("shared-x", MPK_RW, MPK_DOMAIN_SHARED));
	mpk__test_fail(MPK_OS_FAIL_PKEY_ALLOC, 0, 0);
	REQUIRE(ps = mpk_alloc(s, 4096));
	pthread_barrier_wait(&bar);
	REQUIRE(pthread_join(t, NULL) == 0);
	CHECK(other_sees == MPK_RW);
	CHECK(ps[3] == 3);
	CHECK(mpk_get(s) == MPK_RW);
	CHECK(mpk_get(w) == MPK_READ);
	CHECK(p[0] == 9);
	CHECK_FAULT(t_write_in_child(p + 1), w, p + 1);
	return t_done();
}
