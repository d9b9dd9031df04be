/* SPDX-License-Identifier: MIT */
/*
 * mpkit bench malloc's "churn": threads that come and go, each
 * allocating a little (mimalloc-bench's glibc-thread and mleak are of
 * this kind): waves of four threads, each making 200 blocks of 16 to
 * 2,048 bytes, freeing three in four itself and leaving the rest to the
 * next wave, whose threads free them after their makers have exited
 * (frees for a thread that is gone).  The sum is of every value freed.
 */
#include <pthread.h>

#include "mw.h"

#define THREADS 4
#define BLOCKS 200
#define KEEP (BLOCKS / 4)

struct worker {
	uint64_t seed, sum;
	unsigned char *left[KEEP];  /* from the last wave: freed here */
	size_t leftn[KEEP];
	unsigned char *keep[KEEP];  /* for the next wave */
	size_t keepn[KEEP];
};

static void *work(void *arg)
{
	struct worker *w = arg;
	unsigned char *p[BLOCKS];
	size_t n[BLOCKS];
	int k = 0;

	for (int i = 0; i < KEEP; i++)
		if (w->left[i])
			w->sum += mw_check(w->left[i], w->leftn[i]);
	for (int i = 0; i < KEEP; i++)
		free(w->left[i]);
	for (int i = 0; i < BLOCKS; i++) {
		n[i] = mw_size(&w->seed, 16, 2048);
		p[i] = mw_alloc(n[i]);
		mw_stamp(p[i], n[i], mw_rnd(&w->seed) >> 8);
	}
	for (int i = 0; i < BLOCKS; i++) {
		if (i % 4 == 3) {
			w->keep[k] = p[i], w->keepn[k++] = n[i];
			continue;
		}
		w->sum += mw_check(p[i], n[i]);
		free(p[i]);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long waves = mw_amount(argc, argv, 2000, 60);
	static struct worker w[THREADS];
	pthread_t t[THREADS];
	uint64_t s = 0xbb67ae8584caa73bull, sum = 0;

	for (long v = 0; v < waves; v++) {
		for (int k = 0; k < THREADS; k++) {
			/* the blocks thread k-1 of the last wave left */
			const struct worker *from = &w[(k + THREADS - 1) % THREADS];
			w[k].seed = mw_rnd(&s) | 1;
			for (int i = 0; i < KEEP; i++)
				w[k].left[i] = v ? from->keep[i] : NULL, w[k].leftn[i] = from->keepn[i];
		}
		for (int k = 0; k < THREADS; k++) {
			w[k].sum = 0;
			if (pthread_create(&t[k], NULL, work, &w[k])) {
				fprintf(stderr, "pthread_create failed\n");
				return 1;
			}
		}
		for (int k = 0; k < THREADS; k++) {
			pthread_join(t[k], NULL);
			sum += w[k].sum;
		}
	}
	for (int k = 0; k < THREADS; k++)
		for (int i = 0; i < KEEP; i++) {
			sum += mw_check(w[k].keep[i], w[k].keepn[i]);
			free(w[k].keep[i]);
		}
	printf("churn: %ld waves of %d threads, sum %016llx\n", waves, THREADS, (unsigned long long)sum);
	return 0;
}
