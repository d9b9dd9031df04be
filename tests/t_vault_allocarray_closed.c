/*
 * A secret from mpk_secret_allocarray() starts closed, as one from
 * mpk_secret_alloc() does: a thread that has not opened its domain faults
 * reading it, at its first and at its last byte (hw: SEGV_PKUERR with the
 * domain's key; soft: SEGV_ACCERR), the creating thread as well as a new
 * one.  Opened for reading, the same thread reads it, all zero; closed
 * again, it faults again.
 */
#include <pthread.h>

#include "t_heap.h"

enum { N = 100, SIZE = 24 };

static unsigned char *arr;
static size_t at; /* the byte the thread reads */
static int opened; /* the thread opens the domain for reading first */
static mpk_domain *d;

/* The thread ends the child, saying whether it read zeros (exit 0) or
 * not (1): no thread of a forked child exits while holding rights (TSan
 * takes mpkit's lock, made anew in the child, for the parent's still). */
static void *reader(void *arg)
{
	int zeros = 1;

	(void)arg;
	if (opened)
		REQUIRE(mpk_set(d, MPK_READ) == 0);
	t_touch_read(arr + at);
	for (size_t i = 0; i < (size_t)N * SIZE; i++)
		zeros &= arr[i] == 0;
	_exit(zeros ? 0 : 1);
}

/* In a child: a new thread reads; a fault ends the child with the
 * siginfo. */
static void in_thread(void *arg)
{
	pthread_t t;

	(void)arg;
	REQUIRE(pthread_create(&t, NULL, reader, NULL) == 0);
	pthread_join(t, NULL);
	_exit(2); /* not reached */
}

int main(void)
{
	t_backend();
	t_need_memlock(1 << 20);
	REQUIRE(d = mpk_domain_create("array-vault", MPK_NONE, 0));
	REQUIRE(arr = mpk_secret_allocarray(d, N, SIZE));
	CHECK(mpk_get(d) == MPK_NONE);
	CHECK(mpk_domain_of(arr) == d);

	/* The creating thread has not opened it. */
	CHECK_FAULT(t_read_in_child(arr), d, arr);
	CHECK_FAULT(t_read_in_child(arr + N * SIZE - 1), d, arr + N * SIZE - 1);
	/* Nor has a new thread. */
	size_t ends[] = { 0, N * SIZE - 1 };
	for (int i = 0; i < 2; i++) {
		at = ends[i];
		CHECK_FAULT(t_run_child(in_thread, NULL), d, arr + at);
	}
	/* Opened, it reads; closed again, it faults. */
	opened = 1;
	struct t_fault f = t_run_child(in_thread, NULL);
	CHECK_NO_FAULT(f);
	opened = 0;
	CHECK_FAULT(t_run_child(in_thread, NULL), d, arr + at);

	CHECK(mpk_secret_free(arr) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
