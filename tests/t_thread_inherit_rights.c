/*
 * hw: a new thread starts with the rights its creator held at
 * pthread_create() (PKRU is inherited); changes the creator makes later do
 * not reach it, and its own changes do not reach the creator.
 */
#define _GNU_SOURCE
#include <pthread.h>

#include "t.h"

static mpk_domain *da, *db, *dc; /* creator: RW, READ, NONE at creation */
static unsigned char *pa, *pb, *pc;
static pthread_barrier_t bar;

static void check_rights(int a, int b, int c)
{
	CHECK(mpk_get(da) == a);
	CHECK(mpk_get(db) == b);
	CHECK(mpk_get(dc) == c);
}

static void *first(void *arg)
{
	(void)arg;
	check_rights(MPK_RW, MPK_READ, MPK_NONE);
	pthread_barrier_wait(&bar); /* 1: main changes its rights now */
	pthread_barrier_wait(&bar); /* 2: changed */
	check_rights(MPK_RW, MPK_READ, MPK_NONE);
	/* Its rights are real: RW writes, READ reads, NONE faults. */
	pa[1] = 0xa1;
	CHECK(*(volatile unsigned char *)pb == 0xbb);
	CHECK_FAULT(t_write_in_child(pb + 1), db, pb + 1);
	CHECK_FAULT(t_read_in_child(pc + 1), dc, pc + 1);
	/* Its own change stays here. */
	REQUIRE(mpk_set(db, MPK_NONE) == 0);
	pthread_barrier_wait(&bar); /* 3 */
	return NULL;
}

static void *second(void *arg)
{
	(void)arg;
	check_rights(MPK_NONE, MPK_RW, MPK_RW);
	pc[2] = 0xc2;
	CHECK_FAULT(t_read_in_child(pa + 2), da, pa + 2);
	return NULL;
}

int main(void)
{
	pthread_t t1, t2;

	t_need_hw();
	REQUIRE(da = mpk_domain_create("inh-a", MPK_RW, 0));
	REQUIRE(db = mpk_domain_create("inh-b", MPK_RW, 0));
	REQUIRE(dc = mpk_domain_create("inh-c", MPK_RW, 0));
	REQUIRE(pa = mpk_alloc(da, 4096));
	REQUIRE(pb = mpk_alloc(db, 4096));
	REQUIRE(pc = mpk_alloc(dc, 4096));
	pb[0] = 0xbb;
	REQUIRE(mpk_set(db, MPK_READ) == 0);
	REQUIRE(mpk_set(dc, MPK_NONE) == 0);

	REQUIRE(pthread_barrier_init(&bar, NULL, 2) == 0);
	REQUIRE(pthread_create(&t1, NULL, first, NULL) == 0);
	pthread_barrier_wait(&bar); /* 1 */
	REQUIRE(mpk_set(da, MPK_NONE) == 0);
	REQUIRE(mpk_set(db, MPK_RW) == 0);
	REQUIRE(mpk_set(dc, MPK_RW) == 0);
	pthread_barrier_wait(&bar); /* 2 */
	pthread_barrier_wait(&bar); /* 3: the thread changed db for itself */
	CHECK(mpk_get(db) == MPK_RW);
	pb[3] = 0xb3;
	CHECK_FAULT(t_read_in_child(pa), da, pa);
	REQUIRE(pthread_join(t1, NULL) == 0);

	/* A thread created now inherits the new rights. */
	REQUIRE(pthread_create(&t2, NULL, second, NULL) == 0);
	REQUIRE(pthread_join(t2, NULL) == 0);
	CHECK(pc[2] == 0xc2);
	MPK_WITH(da, MPK_READ)
		CHECK(pa[1] == 0xa1);
	return t_done();
}
