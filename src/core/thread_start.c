/* SPDX-License-Identifier: MIT */
/*
 * mpk_thread_create(): pthread_create() whose new thread starts with every
 * domain closed.  On hw a new thread copies its creator's PKRU, so one
 * created inside MPK_WITH would run with the scope's rights for good; the
 * start trampoline closes every key mpkit holds before the user's function
 * runs.  Keyless domains (soft, or evicted on hw) need nothing: a new
 * thread holds no soft rights of its own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "internal.h"

struct start {
	void *(*fn)(void *);
	void *arg;
};

/* Every key mpkit holds (owned or spare), closed in the calling thread.
 * Under mpk_g.lock: a key changing hands meanwhile is closed either way. */
static void close_all(void)
{
	mpk_reg_t mask = 0, bits = 0;

	pthread_mutex_lock(&mpk_g.lock);
	for (int k = 1; k < MPK_ARCH_NKEYS; k++)
		if (mpk_g.key_owner[k] || mpk_g.key_spare[k]) {
			mask |= mpk_arch_key_mask(k);
			bits |= mpk_arch_key_bits(k, MPK_NONE);
		}
	if (mask)
		mpk_arch_reg_update(mask, bits);
	pthread_mutex_unlock(&mpk_g.lock);
}

static void *trampoline(void *p)
{
	struct start s = *(struct start *)p;

	mpk__ifree(p);
	if (mpk_g.backend == MPK_BACKEND_HW)
		close_all();
	mpk__thread_register(); /* broadcasts reach it without a scan */
	return s.fn(s.arg);
}

MPK_EXPORT int mpk_thread_create(pthread_t *thread, const pthread_attr_t *attr,
				 void *(*fn)(void *), void *arg)
{
	if (mpk__ensure_init())
		return -1;
	if (!thread || !fn) {
		errno = EINVAL;
		return -1;
	}
	struct start *s = mpk__ialloc(sizeof(*s));
	if (!s)
		return -1;
	*s = (struct start){ fn, arg };
	int err = pthread_create(thread, attr, trampoline, s);
	if (err) {
		mpk__ifree(s);
		errno = err;
		return -1;
	}
	return 0;
}
