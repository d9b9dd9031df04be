/* SPDX-License-Identifier: MIT */
/*
 * Threads that allocate while others exit, and forks from a threaded
 * program, for the drop-in allocator (t_malloc_threads natively, with
 * libmpkit-malloc.so preloaded; linked with it statically in the VM).
 * Each round starts workers that allocate, fill, check and free blocks
 * of many sizes, some handed to the next round's threads, and exit while
 * the next ones start; a thread forks meanwhile, and the child allocates
 * and exits.  Prints "ok" and exits 0, or names what went wrong.  With
 * the argument "small", blocks are small ones only (up to 3,000 bytes):
 * the mix whose metadata opens per call the VM test bounds on hw.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROUNDS 4
#define WORKERS 4
#define BLOCKS 300
#define HANDED 64

static void *handed[WORKERS][HANDED];
static pthread_mutex_t handed_lock = PTHREAD_MUTEX_INITIALIZER;
static int bad;

static int small;

static size_t size_of(unsigned i)
{
	static const size_t sizes[] = { 1, 8, 24, 100, 500, 3000, 5000, 40000, 200000 };
	static const size_t smalls[] = { 1, 8, 24, 100, 500, 3000, 16, 40, 64 };
	return (small ? smalls : sizes)[i % (sizeof(sizes) / sizeof(*sizes))] + i % 7;
}

static void *worker(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg, seed = id * 2654435761u;
	static __thread char *keep[BLOCKS];

	for (unsigned i = 0; i < BLOCKS; i++) {
		seed = seed * 1103515245u + 12345u;
		size_t n = size_of(seed >> 8);
		char *p = (seed & 1) ? malloc(n) : calloc(1, n);
		if (!p) {
			__atomic_store_n(&bad, 1, __ATOMIC_RELAXED);
			return NULL;
		}
		memset(p, (int)(i & 0xff), n);
		keep[i] = p;
		if (i % 3 == 2) { /* grow an older one */
			unsigned j = i - 1;
			char *q = realloc(keep[j], size_of(j) * 2);
			if (!q || q[0] != (char)(j & 0xff))
				__atomic_store_n(&bad, 1, __ATOMIC_RELAXED);
			else
				keep[j] = q;
		}
	}
	for (unsigned i = 0; i < BLOCKS; i++)
		if (keep[i][0] != (char)(i & 0xff))
			__atomic_store_n(&bad, 1, __ATOMIC_RELAXED);
	/* Free what another thread handed over, hand over some of ours. */
	pthread_mutex_lock(&handed_lock);
	for (unsigned i = 0; i < HANDED; i++) {
		free(handed[id % WORKERS][i]);
		handed[id % WORKERS][i] = keep[i];
		keep[i] = NULL;
	}
	pthread_mutex_unlock(&handed_lock);
	for (unsigned i = HANDED; i < BLOCKS; i++)
		free(keep[i]);
	return NULL;
}

/* A fork while other threads allocate: the child's allocator works. */
static void *forker(void *arg)
{
	(void)arg;
	for (int k = 0; k < 3; k++) {
		pid_t pid = fork();
		if (pid == 0) {
			for (int i = 0; i < 1000; i++) {
				char *p = malloc(size_of((unsigned)i));
				if (!p)
					_exit(3);
				memset(p, 1, size_of((unsigned)i));
				free(p);
			}
			_exit(0);
		}
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
			__atomic_store_n(&bad, 2, __ATOMIC_RELAXED);
			return NULL;
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t prev[WORKERS], cur[WORKERS], fk;
	int have_prev = 0;

	small = argc > 1 && !strcmp(argv[1], "small");

	for (int r = 0; r < ROUNDS; r++) {
		/* This round's threads start while the last round's exit. */
		for (unsigned w = 0; w < WORKERS; w++)
			if (pthread_create(&cur[w], NULL, worker, (void *)(uintptr_t)(r * WORKERS + w))) {
				fprintf(stderr, "malloc-stress: pthread_create failed\n");
				return 1;
			}
		if (r % 4 == 0 && pthread_create(&fk, NULL, forker, NULL) == 0)
			pthread_join(fk, NULL);
		if (have_prev)
			for (unsigned w = 0; w < WORKERS; w++)
				pthread_join(prev[w], NULL);
		memcpy(prev, cur, sizeof(prev));
		have_prev = 1;
	}
	for (unsigned w = 0; w < WORKERS; w++)
		pthread_join(prev[w], NULL);
	for (unsigned w = 0; w < WORKERS; w++)
		for (unsigned i = 0; i < HANDED; i++)
			free(handed[w][i]);
	if (bad) {
		fprintf(stderr, "malloc-stress: %s\n", bad == 2 ? "a forked child failed" : "a block lost its contents or an allocation failed");
		return 1;
	}
	printf("ok\n");
	return 0;
}
