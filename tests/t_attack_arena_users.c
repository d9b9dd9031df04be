/*
 * Attack: the arena counts rewritten.  A new thread takes the arena the
 * fewest live threads hold (src/heap/heap.c, pick()): arena_users counts
 * them, and each thread's arena_mine (thread-local) says which it holds,
 * both in libmpkit's writable data, unsealed, which an attacker finds
 * through the symbol table.  docs/heaps.md says what a rewrite does: it
 * sends threads to other arenas or crowds them onto one, and names no
 * block.  This test plays it:
 *
 * - arena_mine set to a number past the array, pointing its count at a
 *   page of the attacker's above it: the thread's exit (its cache's exit
 *   hook gives the arena back) and a fork (the child counts the forking
 *   thread, in a handler that runs with the metadata open) write no
 *   word outside the array (they decremented and set the page's word),
 *   and a child forked as things are counts its one thread alone;
 * - arena_users filled with garbage (all at the maximum but one, then all
 *   equal), every thread crowded onto one arena: threads that allocate at
 *   once get blocks apart from each other's, each block keeps what its
 *   thread wrote, and a sweep after finds the heap sound.
 *
 * Open and sealed metadata (sealed, threads have no cache and no exit
 * hook: the fork still counts); both backends.
 */
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "t_attack.h"

#define ARENA_COUNTED 0x80000000u /* src/heap/heap.c */
enum { THREADS = 4, BLOCKS = 200, SIZE = 48 };

static struct t_obj users;
static uint32_t *page; /* the attacker's, above arena_users */
static uint32_t *target;
static mpk_heap *h;

/* The calling thread's arena_mine. */
static unsigned *mine(void)
{
	struct t_obj o;

	REQUIRE(t_attack_heap_symbol("arena_mine", &o));
	return (unsigned *)o.at;
}

/* A page the attacker maps above the array, and the count number that
 * names its first word (arena_mine holds 1 + it). */
static unsigned far_number(void)
{
	for (uintptr_t step = 1ul << 30; step >= 1ul << 20 && !page; step >>= 1) {
		uintptr_t at = (users.at + step) & ~(uintptr_t)4095;
		void *p = mmap((void *)at, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			       -1, 0);
		if (p == (void *)at)
			page = p;
		else if (p != MAP_FAILED)
			munmap(p, 4096);
	}
	if (!page)
		t_skip("no page free above arena_users for the attacker's target");
	target = page + 64;
	return (unsigned)(((uintptr_t)target - users.at) / sizeof(uint32_t));
}

static void *far_thread(void *arg)
{
	unsigned n = *(unsigned *)arg;
	void *p = mpk_heap_malloc(h, SIZE);

	CHECK(p != NULL);
	unsigned *m = mine();
	if ((*m & ~ARENA_COUNTED) - 1 >= 8)
		t_fail("arena_mine is not where the attacker computed it (%#x at %p)", *m, (void *)m);
	CHECK(mpk_heap_free(h, p) == 0);
	*m = ARENA_COUNTED | (n + 1); /* the attacker's write */
	return NULL;
}

static void far_counts(void)
{
	unsigned n = far_number();
	pthread_t t;

	*target = 1000;
	REQUIRE(pthread_create(&t, NULL, far_thread, &n) == 0);
	REQUIRE(pthread_join(t, NULL) == 0);
	if (*target != 1000)
		t_fail("a thread's exit wrote %u over the attacker's word %u counts past arena_users", *target, n);

	/* A fork: the forking thread's count, set in the child. */
	void *p = mpk_heap_malloc(h, SIZE); /* this thread holds an arena */
	CHECK(p != NULL);
	unsigned *m = mine(), was = *m;
	int st;
	/* First as it is: the child counts its one thread, on its arena. */
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (!pid) {
		const uint32_t *u = (const uint32_t *)users.at;
		for (unsigned i = 0; i < 8; i++)
			if (u[i] != (i == (was & ~ARENA_COUNTED) - 1 && (was & ARENA_COUNTED)))
				_exit(1);
		_exit(0);
	}
	REQUIRE(waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		t_fail("a forked child does not count its one thread alone on arena %u", (was & ~ARENA_COUNTED) - 1);
	*m = ARENA_COUNTED | (n + 1);
	pid = fork();
	REQUIRE(pid >= 0);
	if (!pid)
		_exit(*target == 1000 ? 0 : 1);
	*m = was;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		t_fail("a forked child wrote the attacker's word %u counts past arena_users (status %#x)", n, st);
	CHECK(mpk_heap_free(h, p) == 0);
}

static void *crowd_thread(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	unsigned char *b[BLOCKS];

	for (int r = 0; r < 20; r++) {
		for (int i = 0; i < BLOCKS; i++) {
			b[i] = mpk_heap_malloc(h, SIZE + (size_t)(i % 3) * 16);
			REQUIRE(b[i]);
			memset(b[i], (int)(id * 16 + (unsigned)i % 16), SIZE);
		}
		for (int i = 0; i < BLOCKS; i++) {
			for (int k = 0; k < SIZE; k++)
				if (b[i][k] != (unsigned char)(id * 16 + (unsigned)i % 16)) {
					t_fail("thread %lu's block %p lost its bytes: another thread has it too",
					       (unsigned long)id, (void *)b[i]);
					break;
				}
			CHECK(mpk_heap_free(h, b[i]) == 0);
		}
	}
	return NULL;
}

static void crowd(uint32_t fill, int spare)
{
	uint32_t *u = (uint32_t *)users.at;
	pthread_t t[THREADS];

	for (size_t i = 0; i < users.size / sizeof(*u); i++)
		u[i] = i == (size_t)spare ? 0 : fill; /* the attacker's writes */
	for (uintptr_t i = 0; i < THREADS; i++)
		REQUIRE(pthread_create(&t[i], NULL, crowd_thread, (void *)i) == 0);
	for (int i = 0; i < THREADS; i++)
		REQUIRE(pthread_join(t[i], NULL) == 0);
}

static void attack(const char *meta)
{
	mpk_domain *d;

	t_setenv("MPKIT_HEAP_META", meta);
	REQUIRE((d = mpk_domain_create("arena-users", MPK_RW, 0)) != NULL);
	REQUIRE((h = mpk_heap_create(d, 0)) != NULL);
	far_counts();
	crowd(0xffffffffu, 1);
	crowd(7, -1);
	crowd(0, -1);
	t_attack_sweep(h, NULL, 0);
	REQUIRE(mpk_heap_destroy(h) == 0);
	REQUIRE(mpk_domain_destroy(d) == 0);
}

int main(void)
{
	REQUIRE(t_attack_heap_symbol("arena_users", &users));
	(void)mine(); /* the attacker finds the thread's number too */
	REQUIRE(users.size == 8 * sizeof(uint32_t));
	t_attack_both_modes(attack);
	return t_done();
}
