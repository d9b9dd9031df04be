/*
 * mpkit's heap as the process's malloc, the way a drop-in uses it:
 * malloc, free, calloc, realloc and the aligned ones are defined here on
 * an mpk heap (a static buffer serves the calls before it exists), so
 * every allocation libc and mpkit make comes to the heap.  Threads
 * allocate and free across many chunks and exit while others allocate:
 * at a thread's exit the heap's destructor flushes its cache under the
 * heaps lock, chunks go back to the window, whose free lists grow.  They
 * grew with realloc(), which came back here and waited for the lock its
 * own thread held: the process hung (issue 22).  Now mpkit's tables come
 * from its own allocator and every round ends.  A hang is this test's
 * failure (the runner's timeout).  Not under a sanitizer, whose runtime
 * owns malloc.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "t.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
int main(void)
{
	t_skip("a sanitizer's runtime owns malloc; this test replaces it");
}
#else

#define EXPORT __attribute__((visibility("default")))

static mpk_heap *heap; /* atomic: NULL until made */

/* ---- before the heap: a bump buffer, a size word in front ---- */

static _Alignas(64) unsigned char boot[8 << 20];
static size_t boot_used; /* atomic */

static bool in_boot(const void *p)
{
	return (const unsigned char *)p >= boot && (const unsigned char *)p < boot + sizeof(boot);
}

static void *boot_alloc(size_t n, size_t align)
{
	if (align < 16)
		align = 16;
	size_t at, p;
	do {
		at = __atomic_load_n(&boot_used, __ATOMIC_RELAXED);
		p = ((uintptr_t)boot + at + 16 + align - 1) & ~(align - 1);
		if (p + n > (uintptr_t)boot + sizeof(boot)) {
			errno = ENOMEM;
			return NULL;
		}
	} while (!__atomic_compare_exchange_n(&boot_used, &at, p + n - (uintptr_t)boot, false,
					      __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
	((size_t *)p)[-1] = n;
	return (void *)p;
}

static size_t boot_size(const void *p)
{
	return ((const size_t *)p)[-1];
}

static mpk_heap *the_heap(void)
{
	return __atomic_load_n(&heap, __ATOMIC_ACQUIRE);
}

/* ---- the allocator ---- */

EXPORT void *malloc(size_t n)
{
	mpk_heap *h = the_heap();
	return h ? mpk_heap_malloc(h, n) : boot_alloc(n, 16);
}

EXPORT void free(void *p)
{
	mpk_heap *h = the_heap();
	if (p && !in_boot(p) && mpk_heap_free(h, p))
		abort(); /* the heap's misuse report has been printed */
}

EXPORT void *calloc(size_t n, size_t size)
{
	mpk_heap *h = the_heap();
	if (h)
		return mpk_heap_calloc(h, n, size);
	if (size && n > SIZE_MAX / size) {
		errno = ENOMEM;
		return NULL;
	}
	return boot_alloc(n * size, 16); /* zeroed: never used before */
}

EXPORT void *realloc(void *p, size_t n)
{
	mpk_heap *h = the_heap();
	if (!p || !in_boot(p))
		return h ? mpk_heap_realloc(h, p, n) : boot_alloc(n, 16);
	void *q = malloc(n);
	if (q)
		memcpy(q, p, boot_size(p) < n ? boot_size(p) : n);
	return q;
}

EXPORT void *memalign(size_t align, size_t n)
{
	mpk_heap *h = the_heap();
	return h ? mpk_heap_aligned_alloc(h, align, n) : boot_alloc(n, align);
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
	return memalign(align, n);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	if (align < sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	void *p = memalign(align, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

EXPORT size_t malloc_usable_size(void *p)
{
	if (!p)
		return 0;
	return in_boot(p) ? boot_size(p) : mpk_heap_usable_size(the_heap(), p);
}

/* ---- the program ---- */

enum { ROUNDS = 5, THREADS = 4, BLOCKS = 1000 };

static void *worker(void *arg)
{
	static const size_t sizes[] = { 16, 100, 700, 2000, 3500, 9000, 30000, 70000 };
	unsigned x = (unsigned)(uintptr_t)arg * 2654435761u + 1;
	void **b = malloc(BLOCKS * sizeof(*b));

	REQUIRE(b);
	for (int i = 0; i < BLOCKS; i++) {
		x = x * 1103515245u + 12345u;
		REQUIRE(b[i] = malloc(sizes[(x >> 12) % 8]));
		memset(b[i], (int)i, 16);
	}
	for (int i = 0; i < BLOCKS; i++) {
		x = x * 1103515245u + 12345u;
		if (x & 0x10000)
			REQUIRE(b[i] = realloc(b[i], sizes[(x >> 12) % 8]));
		CHECK(((unsigned char *)b[i])[3] == (unsigned char)i);
	}
	/* Most go back now; the last ones are in this thread's cache when it
	 * exits, and its destructor gives them back. */
	for (int i = 0; i < BLOCKS; i++)
		free(b[i]);
	free(b);
	void *keep[32];
	for (int i = 0; i < 32; i++)
		REQUIRE(keep[i] = malloc(sizes[i % 5]));
	for (int i = 0; i < 32; i++)
		free(keep[i]);
	return NULL;
}

int main(void)
{
	pthread_t t[THREADS];
	mpk_domain *d;

	t_backend();
	/* Every thread, born or not, may use it, as malloc's memory. */
	REQUIRE(d = mpk_domain_create("malloc", MPK_RW, MPK_DOMAIN_SHARED));
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h);
	__atomic_store_n(&heap, h, __ATOMIC_RELEASE);

	/* malloc is the heap now. */
	char *p = malloc(100);
	REQUIRE(p);
	CHECK(mpk_domain_of(p) == d);
	free(p);

	/* A pool of threads: each one that ends is replaced at once, so
	 * threads exit while the others allocate. */
	for (int i = 0; i < THREADS; i++)
		REQUIRE(pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i) == 0);
	for (int k = THREADS; k < ROUNDS * THREADS; k++) {
		REQUIRE(pthread_join(t[k % THREADS], NULL) == 0);
		REQUIRE(pthread_create(&t[k % THREADS], NULL, worker, (void *)(uintptr_t)k) == 0);
	}
	for (int i = 0; i < THREADS; i++)
		REQUIRE(pthread_join(t[i], NULL) == 0);
	struct mpk_heap_stats st;
	REQUIRE(mpk_heap_stats_get(h, &st) == 0);
	/* Memory went back as the threads gave their blocks back. */
	CHECK(st.mapped < (size_t)64 << 20);
	return t_done();
}
#endif
