/* SPDX-License-Identifier: MIT */
/*
 * The threads mpkit has seen: one entry per live thread that called into
 * mpkit's slow paths or answered a broadcast, so that a broadcast signals
 * them without listing /proc/self/task.  Entries live in chunks that are
 * never freed (a broadcast or a signal handler may read one while its
 * thread exits); a thread claims one with a compare-and-swap on its tid,
 * which a signal handler may do too, and gives it back from a pthread key
 * destructor when it exits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

#include "internal.h"
#include "os.h"

#define CHUNK 64

struct chunk {
	struct mpk_thread t[CHUNK];
	struct chunk *next; /* published with release, never unlinked */
};

static struct chunk first;
static pthread_mutex_t grow_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t nchunks = 1; /* under grow_lock */
static int claimed;        /* entries with a tid; atomic */
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* Initial-exec: a signal handler reads it, and must not make glibc
 * allocate a dynamic TLS block. */
__thread struct mpk_thread *mpk__self __attribute__((tls_model(MPK_TLS_MODEL)));
#define self mpk__self

static void release(struct mpk_thread *t)
{
	__atomic_store_n(&t->pub_ok, 0, __ATOMIC_RELEASE);
	if (__atomic_exchange_n(&t->tid, 0, __ATOMIC_ACQ_REL))
		__atomic_sub_fetch(&claimed, 1, __ATOMIC_RELAXED);
}

static void on_exit_thread(void *p)
{
	if (self == p)
		self = NULL;
	release(p);
}

static void make_key(void)
{
	if (pthread_key_create(&exit_key, on_exit_thread))
		abort(); /* only without memory for a key at all */
}

/* A free entry, claimed for tid; NULL when every chunk is full. */
static struct mpk_thread *claim(pid_t tid)
{
	for (struct chunk *c = &first; c; c = __atomic_load_n(&c->next, __ATOMIC_ACQUIRE))
		for (int i = 0; i < CHUNK; i++) {
			pid_t z = 0;
			if (!__atomic_load_n(&c->t[i].tid, __ATOMIC_RELAXED) &&
			    __atomic_compare_exchange_n(&c->t[i].tid, &z, tid, false,
							__ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
				__atomic_add_fetch(&claimed, 1, __ATOMIC_RELAXED);
				return &c->t[i];
			}
		}
	return NULL;
}

static bool enter(struct mpk_thread *t)
{
	if (!t)
		return false;
	self = t;
	/* For keys below 32 glibc stores the value in the thread's own
	 * block: no allocation, so this is safe in a signal handler too. */
	pthread_setspecific(exit_key, t);
	return true;
}

int mpk__threads_reserve(size_t n)
{
	pthread_once(&key_once, make_key);
	pthread_mutex_lock(&grow_lock);
	size_t want = n + (size_t)__atomic_load_n(&claimed, __ATOMIC_RELAXED);
	struct chunk *last = &first;
	while (last->next)
		last = last->next;
	while (nchunks * CHUNK < want) {
		struct chunk *c = mpk__ialloc(sizeof(*c));
		if (!c) {
			pthread_mutex_unlock(&grow_lock);
			errno = ENOMEM;
			return -1;
		}
		__atomic_store_n(&last->next, c, __ATOMIC_RELEASE);
		last = c;
		nchunks++;
	}
	pthread_mutex_unlock(&grow_lock);
	return 0;
}

void mpk__thread_register(void)
{
	if (likely(self))
		return;
	if (!mpk__threads_reserve(1) && enter(claim(mpk_os_gettid())) &&
	    mpk_g.backend == MPK_BACKEND_HW)
		mpk__pub_init(self);
}

void mpk__pub_note(mpk_reg_t reg)
{
	struct mpk_thread *t = self;

	if (t) {
		__atomic_and_fetch(&t->pub.and_, reg, __ATOMIC_RELAXED);
		__atomic_or_fetch(&t->pub.or_, reg, __ATOMIC_RELAXED);
	}
}

bool mpk__thread_register_signal(void)
{
	return self || enter(claim(mpk_os_gettid()));
}

struct mpk_thread *mpk__thread_next(struct mpk_thread *t)
{
	struct chunk *c = &first;
	size_t i = 0;

	if (t) {
		/* Find t's chunk: there are few. */
		while ((uintptr_t)t < (uintptr_t)c->t || (uintptr_t)t >= (uintptr_t)(c->t + CHUNK))
			c = __atomic_load_n(&c->next, __ATOMIC_ACQUIRE);
		i = (size_t)(t - c->t) + 1;
	}
	for (; c; c = __atomic_load_n(&c->next, __ATOMIC_ACQUIRE), i = 0)
		for (; i < CHUNK; i++)
			if (__atomic_load_n(&c->t[i].tid, __ATOMIC_ACQUIRE))
				return &c->t[i];
	return NULL;
}

void mpk__thread_gone(struct mpk_thread *t, pid_t tid)
{
	/* Only if it still names that thread: it may be reused already
	 * (then it is only untrusted until a broadcast reaches it). */
	__atomic_store_n(&t->pub_ok, 0, __ATOMIC_RELEASE);
	if (__atomic_compare_exchange_n(&t->tid, &tid, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		__atomic_sub_fetch(&claimed, 1, __ATOMIC_RELAXED);
}

pid_t mpk__thread_self_tid(void)
{
	return self ? __atomic_load_n(&self->tid, __ATOMIC_RELAXED) : 0;
}

int mpk__threads_claimed(void)
{
	return __atomic_load_n(&claimed, __ATOMIC_ACQUIRE);
}

void mpk__threads_lock(void)
{
	pthread_mutex_lock(&grow_lock);
}

void mpk__threads_unlock(void)
{
	pthread_mutex_unlock(&grow_lock);
}

void mpk__threads_child(void)
{
	pthread_mutex_init(&grow_lock, NULL);
	for (struct chunk *c = &first; c; c = c->next)
		for (int i = 0; i < CHUNK; i++)
			if (&c->t[i] != self) {
				c->t[i].tid = 0;
				c->t[i].pub_ok = 0;
			}
	claimed = 0;
	if (self) { /* the same entry, under the child's tid */
		self->tid = mpk_os_gettid();
		claimed = 1;
	}
}
