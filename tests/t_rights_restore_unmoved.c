/*
 * mpk_rights_restore() skips its walk of the keyless domains when the
 * thread that saved restores and nothing has moved since.  Each case here
 * is one where something did move, or where it only looks as if nothing
 * did, and the restore must still put back exactly the saved rights:
 *  - another thread restores, with as many changes of its own as the
 *    saver had (the same epoch count): it gets the saver's rights;
 *  - mpk_set_all() from another thread since the save;
 *  - the thread's own mpk_set() since the save;
 *  - nothing at all since the save: the rights stay, accesses as before.
 * Allowed accesses succeed in the restoring thread, forbidden ones fault
 * in a child forked from it.
 */
#include <pthread.h>
#include "t.h"

static mpk_domain *a, *b;
static unsigned char *pa, *pb;
static mpk_rights_t saved;

/* The saver: one change (READ to a), then the save. */
static void *saver(void *arg)
{
	(void)arg;
	REQUIRE(mpk_set(a, MPK_READ) == 0);
	REQUIRE(mpk_rights_save(&saved) == 0);
	REQUIRE(mpk_set(a, MPK_NONE) == 0);
	return NULL;
}

/* Another thread, one change of its own (READ to b), restores the save. */
static void *restorer(void *arg)
{
	(void)arg;
	REQUIRE(mpk_set(b, MPK_READ) == 0);
	REQUIRE(mpk_rights_restore(&saved) == 0);
	CHECK(mpk_get(a) == MPK_READ);
	CHECK(mpk_get(b) == MPK_NONE);
	t_touch_read(pa + 1);
	CHECK_FAULT(t_read_in_child(pb + 2), b, pb + 2);
	CHECK_FAULT(t_write_in_child(pa + 3), a, pa + 3);
	REQUIRE(mpk_set(a, MPK_NONE) == 0);
	return NULL;
}

static void *close_all_of_a(void *arg)
{
	(void)arg;
	REQUIRE(mpk_set_all(a, MPK_NONE) == 0);
	return NULL;
}

static void run(void *(*fn)(void *))
{
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, fn, NULL) == 0);
	REQUIRE(pthread_join(t, NULL) == 0);
}

int main(void)
{
	t_backend();
	REQUIRE(a = mpk_domain_create("unmoved-a", MPK_NONE, 0));
	REQUIRE(b = mpk_domain_create("unmoved-b", MPK_NONE, 0));
	REQUIRE(pa = mpk_alloc(a, 4096));
	REQUIRE(pb = mpk_alloc(b, 4096));

	run(saver);
	run(restorer);
	mpk_rights_dispose(&saved);

	/* This thread: READ to a, RW to b, saved. */
	REQUIRE(mpk_set(a, MPK_READ) == 0);
	REQUIRE(mpk_set(b, MPK_RW) == 0);
	REQUIRE(mpk_rights_save(&saved) == 0);

	/* Nothing since: the same rights, the same accesses. */
	REQUIRE(mpk_rights_restore(&saved) == 0);
	CHECK(mpk_get(a) == MPK_READ && mpk_get(b) == MPK_RW);
	t_touch_read(pa + 4);
	pb[5] = 5;
	CHECK_FAULT(t_write_in_child(pa + 6), a, pa + 6);

	/* Another thread closed a for every thread: the restore reopens it
	 * for this one. */
	run(close_all_of_a);
	CHECK(mpk_get(a) == MPK_NONE);
	CHECK_FAULT(t_read_in_child(pa + 7), a, pa + 7);
	REQUIRE(mpk_rights_restore(&saved) == 0);
	CHECK(mpk_get(a) == MPK_READ);
	t_touch_read(pa + 8);

	/* Its own change: b closed, restored to RW. */
	REQUIRE(mpk_set(b, MPK_NONE) == 0);
	CHECK_FAULT(t_read_in_child(pb + 9), b, pb + 9);
	REQUIRE(mpk_rights_restore(&saved) == 0);
	CHECK(mpk_get(b) == MPK_RW);
	pb[10] = 10;
	CHECK_NO_FAULT(t_write_in_child(pb + 11));

	CHECK(mpk_rights_dispose(&saved) == 0);
	REQUIRE(mpk_set(a, MPK_NONE) == 0);
	REQUIRE(mpk_set(b, MPK_NONE) == 0);
	return t_done();
}
