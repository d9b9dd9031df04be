/*
 * Cross-thread stress: several threads allocate blocks of every kind from
 * one heap, write a cookie at both ends, and hand them to the next thread,
 * which checks the cookie and frees them (some are freed where they were
 * made).  No cookie is ever wrong, no misuse is reported, and at the end
 * the heap holds no block.  Runs under TSan natively.
 */
#include <pthread.h>

#include "t_heap.h"

#define THREADS 4
#define ITERS 6000
#define QCAP 64

struct queue {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	void *p[QCAP];
	size_t n[QCAP];
	unsigned head, len;
};

static struct queue q[THREADS];
static mpk_heap *h;
static int bad_cookies, bad_calls;
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;

static void bad(int *counter)
{
	pthread_mutex_lock(&count_lock);
	(*counter)++;
	pthread_mutex_unlock(&count_lock);
}

static void push(struct queue *x, void *p, size_t n)
{
	pthread_mutex_lock(&x->lock);
	while (x->len == QCAP)
		pthread_cond_wait(&x->cond, &x->lock);
	unsigned i = (x->head + x->len++) % QCAP;
	x->p[i] = p;
	x->n[i] = n;
	pthread_cond_broadcast(&x->cond);
	pthread_mutex_unlock(&x->lock);
}

/* Take one if there is one (wait for one if block). */
static int pop(struct queue *x, void **p, size_t *n, int block)
{
	pthread_mutex_lock(&x->lock);
	while (block && !x->len)
		pthread_cond_wait(&x->cond, &x->lock);
	int got = x->len > 0;
	if (got) {
		*p = x->p[x->head];
		*n = x->n[x->head];
		x->head = (x->head + 1) % QCAP;
		x->len--;
		pthread_cond_broadcast(&x->cond);
	}
	pthread_mutex_unlock(&x->lock);
	return got;
}

static void done_with(void *p, size_t n)
{
	if (!t_cookie_ok(p, n)) {
		bad(&bad_cookies);
		fprintf(stderr, "bad cookie: %p, %zu bytes\n", p, n);
	}
	if (mpk_heap_usable_size(h, p) < n || mpk_heap_free(h, p))
		bad(&bad_calls);
}

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	unsigned seed = 77u * (unsigned)id + 1;
	struct queue *next = &q[(id + 1) % THREADS], *mine = &q[id];
	void *p;
	size_t n;
	int sender_done = 0; /* a NULL from the thread before: it stopped */

	for (int i = 0; i < ITERS; i++) {
		unsigned r = rand_r(&seed);
		n = 16 + r % 200;
		if (r % 16 == 0)
			n = 4000 + r % 60000;  /* large slabs, page runs */
		if (r % 1024 == 0)
			n = 600000;            /* a region of its own */
		void *b = (r % 32 == 1) ? mpk_heap_calloc(h, 1, n) : mpk_heap_malloc(h, n);
		if (!b) {
			bad(&bad_calls);
			continue;
		}
		t_cookie_put(b, n);
		if (r % 5 == 0)
			done_with(b, n); /* freed where it was made */
		else
			push(next, b, n);
		while (pop(mine, &p, &n, 0)) {
			if (p)
				done_with(p, n);
			else
				sender_done = 1;
		}
	}
	push(next, NULL, 0); /* I am done sending */
	while (!sender_done && pop(mine, &p, &n, 1)) {
		if (p)
			done_with(p, n);
		else
			sender_done = 1;
	}
	return NULL;
}

int main(void)
{
	pthread_t t[THREADS];
	struct mpk_heap_stats st;

	t_backend();
	t_misuse_catch();
	mpk_domain *d = mpk_domain_create("heap-stress", MPK_RW, 0);
	REQUIRE(d);
	REQUIRE(h = mpk_heap_create(d, 0));
	for (int i = 0; i < THREADS; i++) {
		pthread_mutex_init(&q[i].lock, NULL);
		pthread_cond_init(&q[i].cond, NULL);
	}
	for (int i = 0; i < THREADS; i++)
		REQUIRE(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) == 0);
	for (int i = 0; i < THREADS; i++)
		REQUIRE(pthread_join(t[i], NULL) == 0);
	CHECK(bad_cookies == 0);
	CHECK(bad_calls == 0);
	CHECK(t_misuses == 0);
	REQUIRE(mpk_heap_stats_get(h, &st) == 0);
	CHECK(st.blocks == 0 && st.bytes == 0);
	if (st.blocks)
		fprintf(stderr, "%zu blocks left\n", st.blocks);
	CHECK(mpk_heap_destroy(h) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
