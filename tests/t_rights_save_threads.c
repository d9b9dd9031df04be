/*
 * A saved set moves between threads: saved on one, restored on another
 * (as a scheduler moving a fiber), the restoring thread holds exactly the
 * saved rights; the saving thread keeps its own.  Access checks: allowed
 * accesses succeed in the restoring thread, forbidden ones fault in a
 * child forked from it.
 */
#include <pthread.h>
#include "t.h"

static mpk_domain *a, *b;
static unsigned char *pa, *pb;
static mpk_rights_t saved;

static void *worker(void *arg)
{
	(void)arg;
	REQUIRE(mpk_rights_restore(&saved) == 0);
	CHECK(mpk_get(a) == MPK_READ);
	CHECK(mpk_get(b) == MPK_RW);
	t_touch_read(pa);
	pb[10] = 42;
	CHECK_NO_FAULT(t_write_in_child(pb + 11));
	CHECK_FAULT(t_write_in_child(pa + 12), a, pa + 12);
	/* And back to nothing: save this thread's set, restore another. */
	mpk_rights_t mine;
	REQUIRE(mpk_rights_save(&mine) == 0);
	REQUIRE(mpk_set(a, MPK_NONE) == 0);
	REQUIRE(mpk_set(b, MPK_NONE) == 0);
	CHECK_FAULT(t_read_in_child(pb + 13), b, pb + 13);
	REQUIRE(mpk_rights_restore(&mine) == 0);
	CHECK(mpk_get(a) == MPK_READ && mpk_get(b) == MPK_RW);
	mpk_rights_dispose(&mine);
	REQUIRE(mpk_set(a, MPK_NONE) == 0);
	REQUIRE(mpk_set(b, MPK_NONE) == 0);
	return NULL;
}

int main(void)
{
	pthread_t t;

	t_backend();
	REQUIRE(a = mpk_domain_create("mv-a", MPK_READ, 0));
	REQUIRE(b = mpk_domain_create("mv-b", MPK_RW, 0));
	REQUIRE(pa = mpk_alloc(a, 4096));
	REQUIRE(pb = mpk_alloc(b, 4096));
	REQUIRE(mpk_rights_save(&saved) == 0);
	/* The saving thread moves on. */
	REQUIRE(mpk_set(a, MPK_NONE) == 0);
	REQUIRE(mpk_set(b, MPK_NONE) == 0);
	REQUIRE(pthread_create(&t, NULL, worker, NULL) == 0);
	REQUIRE(pthread_join(t, NULL) == 0);
	CHECK(mpk_get(a) == MPK_NONE);
	CHECK(mpk_get(b) == MPK_NONE);
	CHECK_FAULT(t_read_in_child(pb + 10), b, pb + 10);
	REQUIRE(mpk_set(b, MPK_READ) == 0);
	CHECK(pb[10] == 42);
	mpk_rights_dispose(&saved);
	return t_done();
}
