/*
 * fork() while other threads are inside heap and vault calls: the child,
 * where only the forking thread lives on, makes heap and vault calls of
 * its own and exits; none hangs on a lock a vanished thread held (each is
 * killed by an alarm if it does).  Blocks the child inherited are intact.
 */
#include <pthread.h>

#include "t_heap.h"

enum { THREADS = 5, FORKS = 40, SLOTS = 64 };

static mpk_domain *d, *v;
static mpk_heap *h;
static unsigned char *kept;
static int stop; /* atomic */

/* Mallocs, frees, reallocs and secrets of assorted sizes, in a loop. */
static void *hammer(void *arg)
{
	void *b[SLOTS] = { 0 }, *s[SLOTS] = { 0 };
	unsigned x = (unsigned)(uintptr_t)arg * 2654435761u + 1;

	REQUIRE(mpk_set(d, MPK_RW) == 0 && mpk_set(v, MPK_RW) == 0);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		x = x * 1103515245u + 12345u;
		unsigned i = (x >> 8) % SLOTS;
		size_t n = 16u << ((x >> 16) % 12); /* 16 B to 32 KiB */
		if (b[i]) {
			REQUIRE(mpk_heap_free(h, b[i]) == 0);
			b[i] = NULL;
		} else if (x & 0x100000) {
			REQUIRE(b[i] = mpk_heap_realloc(h, NULL, n));
		} else {
			REQUIRE(b[i] = mpk_heap_malloc(h, n));
		}
		if (s[i]) {
			REQUIRE(mpk_secret_free(s[i]) == 0);
			s[i] = NULL;
		} else if (n <= 4096) {
			REQUIRE(s[i] = mpk_secret_alloc(v, n));
		}
	}
	for (int i = 0; i < SLOTS; i++) {
		mpk_heap_free(h, b[i]);
		mpk_secret_free(s[i]);
	}
	return NULL;
}

static int in_child(void)
{
	alarm(10);
	void *p[8];
	for (int i = 0; i < 8; i++)
		if (!(p[i] = mpk_heap_malloc(h, 100u << i)))
			return 2;
	void *s = mpk_secret_alloc(v, 48);
	if (!s || mpk_secret_free(s))
		return 3;
	for (int i = 0; i < 8; i++)
		if (mpk_heap_free(h, p[i]))
			return 4;
	return t_intact(kept, 4000, 7) ? 0 : 5;
}

int main(void)
{
	pthread_t t[THREADS];

	t_backend();
	t_need_memlock(8 << 20);
	REQUIRE(d = mpk_domain_create("fork-heap", MPK_NONE, 0));
	REQUIRE(v = mpk_domain_create("fork-vault", MPK_NONE, 0));
	REQUIRE(h = mpk_heap_create(d, 0));
	REQUIRE(mpk_set(d, MPK_RW) == 0 && mpk_set(v, MPK_RW) == 0);
	REQUIRE(kept = mpk_heap_malloc(h, 4000));
	t_fill(kept, 4000, 7);
	for (int i = 0; i < THREADS; i++)
		REQUIRE(pthread_create(&t[i], NULL, hammer, (void *)(uintptr_t)i) == 0);
	int hung = 0, bad = 0;
	for (int i = 0; i < FORKS; i++) {
		usleep(2000);
		/* A bare fork() while the hammers run is the subject: not t_child(). */
		pid_t pid = fork();
		REQUIRE(pid >= 0);
		if (pid == 0)
			_exit(in_child());
		int st;
		REQUIRE(waitpid(pid, &st, 0) == pid);
		if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
			hung++;
		else if (!WIFEXITED(st) || WEXITSTATUS(st))
			bad++;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	if (hung || bad)
		t_fail("%d of %d children hung, %d failed", hung, FORKS, bad);
	CHECK(mpk_heap_free(h, kept) == 0);
	CHECK(mpk_heap_destroy(h) == 0);
	CHECK(mpk_domain_destroy(d) == 0 && mpk_domain_destroy(v) == 0);
	return t_done();
}
