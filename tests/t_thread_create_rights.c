/*
 * A new domain's creator gets exactly the rights it asked for; every other
 * thread gets MPK_NONE, including a thread that initialised mpkit and one
 * that called mpk_info() (both probe the kernel's keys).  Both backends
 * for mpk_get(); on hw the creator's access matches its rights and the
 * other threads' reads fault with the domain's key.
 */
#define _GNU_SOURCE
#include <pthread.h>

#include "t.h"

static const int rights_of[3] = { MPK_NONE, MPK_READ, MPK_RW };
static mpk_domain *dom[3];
static unsigned char *mem[3];
static pthread_barrier_t bar; /* main + 2 threads */
static int hw;

static void others_have_none(const char *who)
{
	for (int i = 0; i < 3; i++) {
		int got = mpk_get(dom[i]);
		if (got != MPK_NONE)
			t_fail("%s holds %d to domain %d created with %d by main",
			       who, got, i, rights_of[i]);
		if (hw) {
			CHECK_FAULT(t_read_in_child(mem[i]), dom[i], mem[i]);
			CHECK_FAULT(t_write_in_child(mem[i] + 1), dom[i], mem[i] + 1);
		}
	}
}

static void *initialiser(void *arg)
{
	(void)arg;
	REQUIRE(mpk_init() == 0); /* the first mpkit call of the process */
	pthread_barrier_wait(&bar); /* 1: initialised */
	pthread_barrier_wait(&bar); /* 2: probed */
	pthread_barrier_wait(&bar); /* 3: domains exist */
	others_have_none("the thread that initialised mpkit");
	return NULL;
}

static void *informed(void *arg)
{
	struct mpk_info in;
	(void)arg;
	pthread_barrier_wait(&bar); /* 1 */
	REQUIRE(mpk_info(&in) == 0);
	pthread_barrier_wait(&bar); /* 2 */
	pthread_barrier_wait(&bar); /* 3 */
	others_have_none("a thread that called mpk_info()");
	return NULL;
}

int main(void)
{
	pthread_t a, b;
	char name[16];

	REQUIRE(pthread_barrier_init(&bar, NULL, 3) == 0);
	REQUIRE(pthread_create(&a, NULL, initialiser, NULL) == 0);
	REQUIRE(pthread_create(&b, NULL, informed, NULL) == 0);
	pthread_barrier_wait(&bar); /* 1 */
	hw = t_backend() == MPK_BACKEND_HW;
	struct mpk_info in;
	REQUIRE(mpk_info(&in) == 0); /* main probes too */
	pthread_barrier_wait(&bar); /* 2 */
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "create-%d", i);
		REQUIRE(dom[i] = mpk_domain_create(name, rights_of[i], 0));
		CHECK(mpk_get(dom[i]) == rights_of[i]);
		/* mpk_alloc() works whatever the creator holds. */
		REQUIRE(mem[i] = mpk_alloc(dom[i], 4096));
	}
	for (int i = 0; i < 3 && hw; i++) {
		unsigned char *p = mem[i];
		switch (rights_of[i]) {
		case MPK_NONE:
			CHECK_FAULT(t_read_in_child(p), dom[i], p);
			break;
		case MPK_READ:
			CHECK(*(volatile unsigned char *)p == 0);
			CHECK_FAULT(t_write_in_child(p), dom[i], p);
			break;
		case MPK_RW:
			*(volatile unsigned char *)p = 1;
			CHECK_NO_FAULT(t_write_in_child(p));
			break;
		}
	}
	pthread_barrier_wait(&bar); /* 3 */
	REQUIRE(pthread_join(a, NULL) == 0);
	REQUIRE(pthread_join(b, NULL) == 0);
	for (int i = 0; i < 3; i++)
		CHECK(mpk_get(dom[i]) == rights_of[i]); /* untouched by others */
	return t_done();
}
