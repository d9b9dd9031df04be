/* SPDX-License-Identifier: MIT */
/*
 * mpkit bench malloc's "larson": a server's shape (after Larson and
 * Krishnan's benchmark): threads replace random blocks of a pool they
 * share, each free a block some other thread may have allocated, and the
 * threads themselves are replaced, a new pair per round.  Sizes 16 to
 * 1,024 bytes.  Which block a thread frees depends on the interleaving;
 * the sum does not: it is of every value freed, which is every value
 * made, and a block handed out twice or overwritten fails its check.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "mw.h"

#define POOL 8192
#define THREADS 2

struct blk {
	size_t n;
	unsigned char *p;
};

static _Atomic(struct blk *) pool[POOL];
static long ops;

struct worker {
	uint64_t seed, made, freed;
};

static struct blk *make(uint64_t *s, uint64_t *made)
{
	struct blk *b = mw_alloc(sizeof(*b));
	uint64_t v = mw_rnd(s) >> 4;

	b->n = mw_size(s, 16, 1024);
	b->p = mw_alloc(b->n);
	mw_stamp(b->p, b->n, v);
	*made += v;
	return b;
}

static uint64_t drop(struct blk *b)
{
	uint64_t v = mw_check(b->p, b->n);

	free(b->p);
	free(b);
	return v;
}

static void *work(void *arg)
{
	struct worker *w = arg;

	for (long i = 0; i < ops; i++) {
		struct blk *b = make(&w->seed, &w->made);
		w->freed += drop(atomic_exchange(&pool[mw_rnd(&w->seed) % POOL], b));
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long total = mw_amount(argc, argv, 16000000, 160000), rounds = 20;
	uint64_t s = 0x6a09e667f3bcc908ull, made = 0, freed = 0;
	struct worker w[THREADS];
	pthread_t t[THREADS];

	ops = total / rounds / THREADS;
	for (int i = 0; i < POOL; i++)
		atomic_store(&pool[i], make(&s, &made));
	for (long r = 0; r < rounds; r++) {
		for (int k = 0; k < THREADS; k++) {
			w[k] = (struct worker){ .seed = mw_rnd(&s) | 1 };
			if (pthread_create(&t[k], NULL, work, &w[k])) {
				fprintf(stderr, "pthread_create failed\n");
				return 1;
			}
		}
		for (int k = 0; k < THREADS; k++) {
			pthread_join(t[k], NULL);
			made += w[k].made;
			freed += w[k].freed;
		}
	}
	for (int i = 0; i < POOL; i++)
		freed += drop(atomic_load(&pool[i]));
	if (made != freed) {
		fprintf(stderr, "larson: values made %016llx, freed %016llx\n", (unsigned long long)made,
			(unsigned long long)freed);
		return 1;
	}
	printf("larson: %ld replacements, sum %016llx\n", ops * rounds * THREADS, (unsigned long long)made);
	return 0;
}
