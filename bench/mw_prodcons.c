/* SPDX-License-Identifier: MIT */
/*
 * mpkit bench malloc's "prodcons": a producer thread allocates blocks
 * and passes them through a ring to a consumer thread, which reads and
 * frees them: every block is freed by a thread that did not allocate it
 * (an allocator's remote-free path; mimalloc-bench's xmalloc-test and
 * mstress have this shape).  Sizes 16 to 1,024 bytes.  The sum is of
 * the values the consumer read, the same in every interleaving.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "mw.h"

#define RING 1024 /* a power of two */

static struct {
	_Atomic(unsigned char *) slot[RING];
	_Atomic size_t size[RING];
	atomic_long head, tail; /* written by the producer, the consumer */
} ring;
static long n;

static void *producer(void *arg)
{
	uint64_t s = 0x51ed270b27a3f1c9ull;

	(void)arg;
	for (long i = 0; i < n; i++) {
		size_t sz = mw_size(&s, 16, 1024);
		unsigned char *p = mw_alloc(sz);
		mw_stamp(p, sz, (uint64_t)i * 0x9e3779b97f4a7c15ull);
		while (i - atomic_load_explicit(&ring.tail, memory_order_acquire) >= RING)
			sched_yield();
		atomic_store_explicit(&ring.size[i % RING], sz, memory_order_relaxed);
		atomic_store_explicit(&ring.slot[i % RING], p, memory_order_relaxed);
		atomic_store_explicit(&ring.head, i + 1, memory_order_release);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	uint64_t sum = 0;

	n = mw_amount(argc, argv, 6000000, 100000);
	if (pthread_create(&t, NULL, producer, NULL)) {
		fprintf(stderr, "pthread_create failed\n");
		return 1;
	}
	for (long i = 0; i < n; i++) {
		while (atomic_load_explicit(&ring.head, memory_order_acquire) <= i)
			sched_yield();
		unsigned char *p = atomic_load_explicit(&ring.slot[i % RING], memory_order_relaxed);
		size_t sz = atomic_load_explicit(&ring.size[i % RING], memory_order_relaxed);
		sum += mw_check(p, sz) >> 7;
		free(p);
		atomic_store_explicit(&ring.tail, i + 1, memory_order_release);
	}
	pthread_join(t, NULL);
	printf("prodcons: %ld blocks, sum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
