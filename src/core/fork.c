/* SPDX-License-Identifier: MIT */
/*
 * fork() while other threads are inside mpkit.  Only the forking thread
 * lives on in the child, so a lock another thread held at the fork would
 * stay held there for good and the child's first mpkit call would hang.
 * As glibc's malloc does, prepare takes every lock (layers above first,
 * then the core's in its order: mpk_g.lock, every domain's lock, the
 * broadcast lock, the registry's, the window's, the internal allocator's),
 * the parent releases them, and the child makes them anew,
 * with a registry of one thread and no broadcast under way.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>

#include "internal.h"
#include "window.h"

#define LAYERS 4

static struct layer {
	void (*prepare)(void), (*parent)(void), (*child)(void);
} layers[LAYERS];
static int nlayers; /* published with release after its entry */

int mpk__atfork_register(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
	pthread_mutex_lock(&mpk_g.lock);
	int n = nlayers;
	if (n == LAYERS) {
		pthread_mutex_unlock(&mpk_g.lock);
		errno = ENOMEM;
		return -1;
	}
	layers[n] = (struct layer){ prepare, parent, child };
	__atomic_store_n(&nlayers, n + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&mpk_g.lock);
	return 0;
}

/* How many layers the prepare handler saw: the others run the same set,
 * even if one registers in between (it waits for mpk_g.lock). */
static __thread int seen; /* forks in two threads at once each keep theirs */

static void prepare(void)
{
	seen = __atomic_load_n(&nlayers, __ATOMIC_ACQUIRE);
	for (int i = 0; i < seen; i++)
		if (layers[i].prepare)
			layers[i].prepare();
	pthread_mutex_lock(&mpk_g.lock);
	mpk__domains_lock();
	mpk__broadcast_lock();
	mpk__threads_lock();
	mpk__window_lock();
	mpk__ialloc_lock(); /* a leaf, under all of them */
}

static void parent(void)
{
	mpk__ialloc_unlock();
	mpk__window_unlock();
	mpk__threads_unlock();
	mpk__broadcast_unlock();
	mpk__domains_unlock();
	pthread_mutex_unlock(&mpk_g.lock);
	for (int i = seen; i-- > 0;)
		if (layers[i].parent)
			layers[i].parent();
}

static void child(void)
{
	mpk__ialloc_child();
	mpk__window_child();
	mpk__secretmem_child(); /* before any layer's handler touches a vault */
	mpk__threads_child();
	mpk__broadcast_child();
	mpk__domains_child();
	pthread_mutex_init(&mpk_g.lock, NULL);
	for (int i = seen; i-- > 0;)
		if (layers[i].child)
			layers[i].child();
}

void mpk__atfork_init(void)
{
	pthread_atfork(prepare, parent, child);
}
