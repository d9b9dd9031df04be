/* SPDX-License-Identifier: MIT */
/*
 * What the layers above install in the core, so that the core never calls
 * up (docs/guide.md, Layout; tests/check-layers.sh checks the calls): the
 * ranges a layer keeps outside domain regions (the heap's metadata area),
 * which the lockdown reads; the cover hook mpk_lockdown() installs, which
 * the core calls for memory it adds afterwards; the fault hooks the SIGSEGV
 * handler asks first (watchpoints).  Each table only grows: an entry is
 * written, then published with release, and read without a lock.
 */
#include <errno.h>
#include <pthread.h>

#include "core.h"

#define LAYERS_MAX 4
#define FAULT_HOOKS_MAX 4

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* writers; a leaf */
static struct mpk_layer_ranges layers[LAYERS_MAX];
static unsigned nlayers;
static mpk_fault_hook *fault_hooks[FAULT_HOOKS_MAX];
static unsigned nfault_hooks;
static mpk_cover_hook *cover_hook;

int mpk__layer_ranges_register(const struct mpk_layer_ranges *r)
{
	int rc = 0;

	pthread_mutex_lock(&lock);
	if (nlayers == LAYERS_MAX) {
		errno = ENOMEM;
		rc = -1;
	} else {
		layers[nlayers] = *r;
		__atomic_store_n(&nlayers, nlayers + 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&lock);
	return rc;
}

void mpk__layer_ranges_each(void (*fn)(uintptr_t lo, uintptr_t hi, void *arg), void *arg)
{
	unsigned n = __atomic_load_n(&nlayers, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; i < n; i++)
		layers[i].each(fn, arg);
}

unsigned mpk__layer_ranges_lock(void)
{
	unsigned n = __atomic_load_n(&nlayers, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; i < n; i++)
		layers[i].lock();
	return n;
}

void mpk__layer_ranges_unlock(unsigned n)
{
	while (n--)
		layers[n].unlock();
}

void mpk__cover_hook_set(mpk_cover_hook *fn)
{
	__atomic_store_n(&cover_hook, fn, __ATOMIC_RELEASE);
}

int mpk__cover(uintptr_t lo, uintptr_t hi)
{
	mpk_cover_hook *fn = __atomic_load_n(&cover_hook, __ATOMIC_ACQUIRE);
	return fn ? fn(lo, hi) : 0;
}

int mpk__fault_hook_register(mpk_fault_hook *fn)
{
	int rc = 0;

	pthread_mutex_lock(&lock);
	if (nfault_hooks == FAULT_HOOKS_MAX) {
		errno = ENOMEM;
		rc = -1;
	} else {
		fault_hooks[nfault_hooks] = fn;
		__atomic_store_n(&nfault_hooks, nfault_hooks + 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&lock);
	return rc;
}

bool mpk__fault_hooks_run(siginfo_t *si, void *uc)
{
	unsigned n = __atomic_load_n(&nfault_hooks, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; i < n; i++)
		if (fault_hooks[i](si, uc))
			return true;
	return false;
}
