/* SPDX-License-Identifier: MIT */
/*
 * Rights of the calling thread.  The hw path is the reason mpkit exists:
 * validate, read PKRU, splice two bits, write PKRU.  No system call, no lock,
 * no allocation, no stack frame, no call; everything else is out of line.
 */
#define _GNU_SOURCE
#include <errno.h>

#include "internal.h"

static inline bool fast_ok(const struct mpk_domain *d, int rights)
{
	return mpk__domain_ok(d) && mpk__rights_ok(rights) && d->key >= 0;
}

/* Put rights for d's key into reg, and write it if that changes it
 * (WRPKRU costs more than the compare). */
static inline void hw_apply(const struct mpk_domain *d, mpk_reg_t reg, int rights)
{
	mpk_reg_t next = (reg & ~mpk_arch_key_mask(d->key)) | mpk_arch_key_bits(d->key, rights);
	if (next != reg)
		mpk_arch_reg_write(next);
}

static __attribute__((noinline, cold)) int set_slow(struct mpk_domain *d, int rights)
{
	if (!mpk__domain_ok(d) || !mpk__rights_ok(rights)) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&mpk_g.lock);
	/* Re-checked under the lock: a concurrent destroy may have won. */
	int rc = mpk__domain_ok(d) ? mpk__soft_set_locked(d, rights) : (errno = EINVAL, -1);
	pthread_mutex_unlock(&mpk_g.lock);
	return rc;
}

static inline int set_rights(struct mpk_domain *d, int rights)
{
	if (likely(fast_ok(d, rights))) {
		hw_apply(d, mpk_arch_reg_read(), rights);
		return 0;
	}
	return set_slow(d, rights);
}

MPK_EXPORT int mpk_set(mpk_domain *d, int rights)
{
	return set_rights(d, rights);
}

MPK_EXPORT int mpk_get(const mpk_domain *d)
{
	if (unlikely(!mpk__domain_ok(d))) {
		errno = EINVAL;
		return -1;
	}
	if (likely(d->key >= 0))
		return mpk_arch_key_rights(mpk_arch_reg_read(), d->key);
	return mpk__soft_get(d);
}

static __attribute__((noinline, cold)) mpk_scope enter_slow(struct mpk_domain *d, int rights)
{
	mpk_scope s = { .domain = NULL, .saved = -1 };

	if (!mpk__domain_ok(d) || !mpk__rights_ok(rights)) {
		errno = EINVAL;
		return s;
	}
	int saved = mpk_get(d);
	if (set_slow(d, rights))
		return s;
	return (mpk_scope){ .domain = d, .saved = saved };
}

MPK_EXPORT mpk_scope mpk_enter(mpk_domain *d, int rights)
{
	if (likely(fast_ok(d, rights))) {
		mpk_reg_t reg = mpk_arch_reg_read();
		hw_apply(d, reg, rights);
		return (mpk_scope){ .domain = d, .saved = mpk_arch_key_rights(reg, d->key) };
	}
	return enter_slow(d, rights);
}

MPK_EXPORT int mpk_leave(mpk_scope *s)
{
	if (unlikely(!s)) {
		errno = EINVAL;
		return -1;
	}
	if (!s->domain)
		return 0; /* a failed enter, or left already: nothing to restore */
	int rc = set_rights(s->domain, s->saved);
	if (likely(!rc))
		s->domain = NULL;
	return rc;
}

MPK_EXPORT void mpk__scope_cleanup(mpk_scope *s)
{
	if (s && s->domain)
		mpk_leave(s);
}
