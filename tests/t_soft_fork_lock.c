/*
 * Soft backend: fork() waits for a rights change under way by taking every
 * domain's lock (no shared in-flight counter on the change's path).
 *  1. A's lock held (as by a change between its mprotect() calls): a fork
 *     from another thread does not return until it is released.
 *  2. The child of that fork changes A and B (their locks made anew: no
 *     hang, under an alarm), writes A's page with RW (allowed: succeeds)
 *     and faults reading it after closing.
 *  3. The parent then changes A again (the fork released the locks).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include "internal.h"
#include "t.h"

static mpk_domain *a, *b;
static unsigned char *pa;
static atomic_int forked;
static pid_t child;

static int in_child(void)
{
	alarm(10);
	if (mpk_set(a, MPK_RW) || mpk_set(b, MPK_RW))
		return 2;
	pa[0] = 9; /* allowed: RW held */
	if (mpk_set(a, MPK_NONE) || mpk_set(b, MPK_NONE))
		return 3;
	struct t_fault f = t_read_in_child(pa);
	return f.faulted && f.code == SEGV_ACCERR && f.where == pa ? 0 : 4;
}

static void *forker(void *arg)
{
	(void)arg;
	pid_t p = fork();
	if (p == 0)
		_exit(in_child());
	child = p;
	atomic_store(&forked, 1);
	return NULL;
}

int main(void)
{
	pthread_t t;
	int st;

	t_force_soft();
	REQUIRE(a = mpk_domain_create("fork-a", MPK_NONE, 0));
	REQUIRE(b = mpk_domain_create("fork-b", MPK_NONE, 0));
	REQUIRE(pa = mpk_alloc(a, 4096));

	/* 1 */
	mpk__lock(&a->lock);
	REQUIRE(pthread_create(&t, NULL, forker, NULL) == 0);
	usleep(100000);
	CHECK(!atomic_load(&forked)); /* the fork waits for a's lock */
	mpk__unlock(&a->lock);
	REQUIRE(pthread_join(t, NULL) == 0);
	CHECK(atomic_load(&forked));
	REQUIRE(child > 0);

	/* 2 */
	REQUIRE(waitpid(child, &st, 0) == child);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);

	/* 3 */
	CHECK(mpk_set(a, MPK_RW) == 0);
	pa[1] = 1;
	CHECK(mpk_set(a, MPK_NONE) == 0);
	CHECK_FAULT(t_read_in_child(pa + 1), a, pa + 1);
	return t_done();
}
