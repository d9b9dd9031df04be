/*
 * mpk_heap_free() leaves errno as it was when it succeeds (the drop-in's
 * free() relies on it: free keeps errno): on its fast path (a block into
 * the thread's cache) and on its slow paths, also when a call of its own
 * fails on the way: a thread whose cache cannot be mapped (RLIMIT_AS at
 * the process's size) frees through the arena, and that map's ENOMEM
 * stays inside.  Big blocks, a wiping heap's blocks (the slow way), and
 * every call with the metadata closed (each one opens it) keep errno too.
 * A free that fails still says why.
 */
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "t_heap.h"

#define KEEP 4321

static mpk_heap *heap;
static void *blk[8];

/* errno set to KEEP, then mpk_heap_free(h, p): 0, and errno still KEEP. */
static void free_keeps(mpk_heap *h, void *p)
{
	errno = KEEP;
	CHECK(mpk_heap_free(h, p) == 0);
	CHECK(errno == KEEP);
}

static size_t vsize(void)
{
	unsigned long pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	REQUIRE(f);
	REQUIRE(fscanf(f, "%lu", &pages) == 1);
	fclose(f);
	return pages * (size_t)sysconf(_SC_PAGESIZE);
}

static void *no_room(void *arg)
{
	(void)arg;
	struct rlimit rl;
	REQUIRE(getrlimit(RLIMIT_AS, &rl) == 0);
	rl.rlim_cur = vsize() + 64 * 1024;
	REQUIRE(setrlimit(RLIMIT_AS, &rl) == 0);
	/* the limit bites: no room for a thread cache (hundreds of KiB) */
	void *m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m == MAP_FAILED && errno == ENOMEM);
	for (int i = 0; i < 8; i++)
		free_keeps(heap, blk[i]);
	return NULL;
}

/* This thread's first free, its cache not to be had. */
static void cache_unmappable(void)
{
	mpk_domain *d = mpk_domain_create("free-errno-as", MPK_RW, 0);
	REQUIRE(d && (heap = mpk_heap_create(d, 0)));
	for (int i = 0; i < 8; i++)
		REQUIRE(blk[i] = mpk_heap_malloc(heap, 48));
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, no_room, NULL) == 0);
	REQUIRE(pthread_join(t, NULL) == 0);
}

static void kinds(unsigned flags)
{
	mpk_domain *d = mpk_domain_create("free-errno", MPK_RW, 0);
	REQUIRE(d);
	mpk_heap *h = mpk_heap_create(d, flags);
	REQUIRE(h);
	static const size_t sizes[] = { 1, 32, 256, 4000, 20000, 100000, 1 << 20 };
	for (int round = 0; round < 3; round++) /* the first fills a cache */
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			void *p = mpk_heap_malloc(h, sizes[i]);
			REQUIRE(p);
			t_fill(p, sizes[i], (unsigned)i);
			free_keeps(h, p);
		}
	/* a full cache gives half back on the way */
	void *many[600];
	for (int i = 0; i < 600; i++)
		REQUIRE(many[i] = mpk_heap_malloc(h, 64));
	for (int i = 0; i < 600; i++)
		free_keeps(h, many[i]);
	errno = KEEP;
	CHECK(mpk_heap_free(h, NULL) == 0 && errno == KEEP);
	/* a failed free says why */
	CHECK_ERR(mpk_heap_free(NULL, many[0]), EINVAL);
	CHECK(mpk_heap_destroy(h) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
}

static void closed(void)
{
	setenv("MPKIT_HEAP_META", "closed", 1);
	kinds(0);
}

int main(void)
{
	t_backend();
	kinds(0);
	kinds(MPK_HEAP_WIPE);
	t_in_child(closed, "MPKIT_HEAP_META=closed");
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
	/* (ASan's and TSan's runtimes map as they go: under the limit they die) */
	t_in_child(cache_unmappable, "RLIMIT_AS: no thread cache");
#endif
	return t_done();
}
