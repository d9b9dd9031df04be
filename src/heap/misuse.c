/* SPDX-License-Identifier: MIT */
/*
 * Misuse of heaps and vaults (double free, a pointer from another heap or
 * from nowhere, a corrupted block header): a report, then the user's
 * handler, or by default the report on stderr and abort().  Reports are made
 * after the call has put every right back, so a handler runs with the
 * caller's rights and may call mpkit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "heap.h"

pthread_mutex_t mpk__misuse_lock = PTHREAD_MUTEX_INITIALIZER; /* the handler */
#define user_fn (mpk__seal_pg.s.misuse_fn) /* sealed with the allocator's globals */
#define user_arg (mpk__seal_pg.s.misuse_arg)

static const char *what(int kind)
{
	switch (kind) {
	case MPK_MISUSE_DOUBLE_FREE: return "double free of";
	case MPK_MISUSE_FOREIGN: return "foreign pointer";
	case MPK_MISUSE_WILD: return "wild pointer";
	case MPK_MISUSE_CORRUPT: return "corrupted block header before";
	}
	return NULL;
}

MPK_EXPORT size_t mpk_misuse_format(const struct mpk_misuse *m, char *buf, size_t size)
{
	const char *w = m ? what(m->kind) : NULL;
	char where[160] = "", tail[200] = "";

	if (!w || (!buf && size)) {
		errno = EINVAL;
		return 0;
	}
	if (m->heap)
		snprintf(where, sizeof(where), " (heap %p, domain \"%s\")", (void *)m->heap,
			 m->domain_name ? m->domain_name : "?");
	else if (m->domain)
		snprintf(where, sizeof(where), " (vault of domain \"%s\")",
			 m->domain_name ? m->domain_name : "?");
	switch (m->kind) {
	case MPK_MISUSE_DOUBLE_FREE:
		snprintf(tail, sizeof(tail), ": the block was freed already");
		break;
	case MPK_MISUSE_FOREIGN:
		if (m->owner)
			snprintf(tail, sizeof(tail), ": it belongs to heap %p (domain \"%s\")",
				 (void *)m->owner, m->owner_domain_name ? m->owner_domain_name : "?");
		else
			snprintf(tail, sizeof(tail), ": it is a secret in the vault of domain \"%s\"",
				 m->owner_domain_name ? m->owner_domain_name : "?");
		break;
	case MPK_MISUSE_WILD:
		snprintf(tail, sizeof(tail), ": no heap or vault handed it out");
		break;
	case MPK_MISUSE_CORRUPT:
		snprintf(tail, sizeof(tail),
			 ": its header was overwritten (an overflow of the block before it?)");
		break;
	}
	int n = snprintf(buf, size, "mpkit: heap misuse: %s %p in %s%s%s\n", w, m->addr,
			 m->call ? m->call : "?", where, tail);
	return n < 0 ? 0 : (size_t)n;
}

static void report(const struct mpk_misuse *m)
{
	char small[1024];
	struct mpk__text fallback = { small, sizeof(small), 0 }, *t = mpk__report_open(&fallback);
	size_t n = mpk_misuse_format(m, t->buf + t->len, t->size - t->len);

	t->len += n < t->size - t->len ? n : t->size - t->len - 1;
	mpk__backtrace_print(t, 0);
	mpk__report_close(t);
}

void mpk__misuse(struct mpk_misuse *m)
{
	pthread_mutex_lock(&mpk__misuse_lock);
	mpk_misuse_fn fn = user_fn;
	void *arg = user_arg;
	pthread_mutex_unlock(&mpk__misuse_lock);
	if (fn) {
		fn(m, arg);
		return;
	}
	report(m);
	abort();
}

int mpk__misuse_rc(int rc, struct mpk_misuse *m)
{
	if (rc <= 0)
		return rc;
	mpk__misuse(m);
	errno = EINVAL;
	return -1;
}

MPK_EXPORT int mpk_misuse_handler_set(mpk_misuse_fn fn, void *arg)
{
	if (!fn && arg) {
		errno = EINVAL; /* an argument for nobody: a mistake */
		return -1;
	}
	int rc = 0;
	pthread_mutex_lock(&mpk__meta_lock);
	if (mpk__seal_write(&user_fn, 2 * sizeof(void *), true)) {
		rc = -1;
	} else {
		mpk_misuse_fn old_fn = user_fn;
		void *old_arg = user_arg;
		pthread_mutex_lock(&mpk__misuse_lock);
		user_fn = fn;
		user_arg = arg;
		pthread_mutex_unlock(&mpk__misuse_lock);
		if (mpk__seal_write(&user_fn, 2 * sizeof(void *), false)) {
			int err = errno; /* not sealed again: the old handler back */
			pthread_mutex_lock(&mpk__misuse_lock);
			user_fn = old_fn;
			user_arg = old_arg;
			pthread_mutex_unlock(&mpk__misuse_lock);
			errno = err;
			rc = -1;
		}
	}
	pthread_mutex_unlock(&mpk__meta_lock);
	return rc;
}
