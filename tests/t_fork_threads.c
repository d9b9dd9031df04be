/*
 * fork() while other threads hammer mpkit (set, enter/leave, create,
 * destroy, alloc/free, set_all): every child makes mpkit calls of each kind
 * (including a process-wide change, which must reach only itself) and
 * exits within an alarm.  Without the fork handlers a child forked while
 * another thread held mpkit's lock hangs at its first call.
 */
#include <pthread.h>
#include <sys/wait.h>
#include "t.h"

#define HAMMERS 4
#define FORKS 24

static mpk_domain *shared;
static int stop; /* atomic */

static void *hammer(void *arg)
{
	long id = (long)arg;
	char name[32];

	for (unsigned i = 0; !__atomic_load_n(&stop, __ATOMIC_RELAXED); i++) {
		REQUIRE(mpk_set(shared, i & 1 ? MPK_RW : MPK_READ) == 0);
		mpk_scope s = mpk_enter(shared, MPK_RW);
		REQUIRE(s.domain);
		REQUIRE(mpk_leave(&s) == 0);
		snprintf(name, sizeof(name), "h%ld", id);
		mpk_domain *d = mpk_domain_create(name, MPK_RW, 0);
		REQUIRE(d);
		void *p = mpk_alloc(d, 4096);
		REQUIRE(p);
		REQUIRE(mpk_free(d, p) == 0);
		if (id == 0)
			REQUIRE(mpk_set_all(shared, MPK_RW) == 0);
		REQUIRE(mpk_domain_destroy(d) == 0);
	}
	return NULL;
}

/* In the child: one of each kind of call; 0 when all worked. */
static int child_calls(void)
{
	alarm(20);
	mpk_domain *d = mpk_domain_create("child", MPK_RW, 0);
	if (!d)
		return 2;
	unsigned char *p = mpk_alloc(d, 4096);
	if (!p)
		return 3;
	p[0] = 1;
	if (mpk_set(d, MPK_READ) || mpk_get(d) != MPK_READ || p[0] != 1)
		return 4;
	if (mpk_set_all(d, MPK_RW) || mpk_get(d) != MPK_RW)
		return 5;
	p[1] = 2;
	if (mpk_set_all(shared, MPK_RW) || mpk_get(shared) != MPK_RW)
		return 6;
	if (mpk_free(d, p) || mpk_domain_destroy(d))
		return 7;
	return 0;
}

int main(void)
{
	pthread_t th[HAMMERS];

	shared = mpk_domain_create("shared", MPK_RW, MPK_DOMAIN_SHARED);
	REQUIRE(shared);
	for (long i = 0; i < HAMMERS; i++)
		REQUIRE(pthread_create(&th[i], NULL, hammer, (void *)i) == 0);
	int ok = 0;
	for (int i = 0; i < FORKS; i++) {
		usleep(2000 + 1000 * (i % 5));
		/* A bare fork() while the hammers run is the subject: not t_child(). */
		pid_t c = fork();
		REQUIRE(c >= 0);
		if (c == 0)
			_exit(child_calls());
		int st;
		REQUIRE(waitpid(c, &st, 0) == c);
		if (WIFSIGNALED(st))
			t_fail("fork %d: child killed by signal %d (%s)", i, WTERMSIG(st),
			       WTERMSIG(st) == SIGALRM ? "hung" : "crashed");
		else if (WEXITSTATUS(st))
			t_fail("fork %d: child failed at step %d", i, WEXITSTATUS(st));
		else
			ok++;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < HAMMERS; i++)
		REQUIRE(pthread_join(th[i], NULL) == 0);
	printf("%d of %d children completed their mpkit calls\n", ok, FORKS);
	REQUIRE(mpk_domain_destroy(shared) == 0);
	return t_done();
}
