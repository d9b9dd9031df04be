/* SPDX-License-Identifier: MIT */
/*
 * fork() while other threads are inside heap or vault calls.  Only the
 * forking thread lives on in the child, so a lock another thread held would
 * stay held there for good.  As glibc's malloc does, the prepare handler
 * takes every heap lock in the documented order (heap.h), the parent's
 * handler releases them, and the child's makes them anew; a child also
 * learns that mlock() was not inherited (mpk__fork_gen) and relocks its
 * vaults before handing out a secret.
 *
 * The core's own locks, taken inside heap calls, come after ours: the
 * handlers are registered with the core (mpk__atfork_register), which runs
 * every layer's prepare before its own and their parent and child
 * handlers after its own.
 */
#define _GNU_SOURCE
#include <pthread.h>

#include "heap.h"

unsigned mpk__fork_gen;

/* The registry and the arena locks are in the metadata, which prepare opens
 * for the forking thread and parent and child close (the child inherits
 * the forking thread's rights).  If it cannot be opened, the arena locks
 * are not taken: a child may then hang as before, rather than fault. */
static bool arenas_held;

/* Close it as it was before prepare: sealed, no rights (no heap call
 * forks, and between calls a thread holds none to the area).  Not from a
 * scope kept in writable data from prepare to the handlers: rewritten
 * meanwhile (fork() takes long enough for another thread to), its leave
 * would have set any domain to any rights for the forking thread, and
 * left the area open to it. */
static void meta_shut(void)
{
	mpk_scope s = { __atomic_load_n(&mpk__meta_dom, __ATOMIC_ACQUIRE), MPK_NONE };

	mpk__meta_close(&s);
}

static void lock_all(void)
{
	mpk_scope meta;

	pthread_mutex_lock(&mpk__vault_lock);
	pthread_mutex_lock(&mpk__heaps_lock);
	arenas_held = !mpk__meta_open(&meta);
	if (arenas_held)
		for (struct heap *h = *mpk__meta_heaps(); h; h = h->next)
			for (unsigned i = 0; i < h->narenas; i++)
				pthread_mutex_lock(&h->arenas[i].lock);
	pthread_mutex_lock(&mpk__meta_lock);
	pthread_mutex_lock(&mpk__misuse_lock);
}

/* Each lock, last taken first: unlocked in the parent, made anew in the
 * child (glibc allows unlocking there, but a fresh one is what it does). */
static void each_lock(void (*fn)(pthread_mutex_t *))
{
	fn(&mpk__misuse_lock);
	fn(&mpk__meta_lock);
	if (arenas_held)
		for (struct heap *h = *mpk__meta_heaps(); h; h = h->next)
			for (unsigned i = h->narenas; i-- > 0;)
				fn(&h->arenas[i].lock);
	meta_shut();
	fn(&mpk__heaps_lock);
	fn(&mpk__vault_lock);
}

static void unlock(pthread_mutex_t *m)
{
	pthread_mutex_unlock(m);
}

static void renew(pthread_mutex_t *m)
{
	pthread_mutex_init(m, NULL);
}

static void parent(void)
{
	each_lock(unlock);
}

static void child(void)
{
	__atomic_add_fetch(&mpk__fork_gen, 1, __ATOMIC_RELAXED);
	mpk__runs_moved();
	mpk__arena_forked();
	each_lock(renew);
}

static void once(void)
{
	if (mpk__atfork_register(lock_all, parent, child))
		pthread_atfork(lock_all, parent, child); /* table full: ours */
}

void mpk__heap_atfork(void)
{
	static pthread_once_t done = PTHREAD_ONCE_INIT;

	pthread_once(&done, once);
}
