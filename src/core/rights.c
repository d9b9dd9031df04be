/* SPDX-License-Identifier: MIT */
/*
 * Rights of the calling thread.  The hw path is the reason mpkit exists:
 * validate, read PKRU, splice two bits, write PKRU.  No system call, no lock,
 * no allocation, no stack frame, no call; everything else is out of line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Mark d used now, for the choice of a domain to evict (slow paths only:
 * the fast path leaves it to the published registers, see evict_lru()). */
static inline void touch(struct mpk_domain *d)
{
	uint64_t t = __atomic_load_n(&mpk_g.tick, __ATOMIC_RELAXED);
	if (__atomic_load_n(&d->lru, __ATOMIC_RELAXED) != t)
		__atomic_store_n(&d->lru, t, __ATOMIC_RELAXED);
}

/*
 * The hw fast path's guard: a live domain handle and rights in range (the
 * word for 2 is 0 and sends it the slow way); then a registered thread (a
 * thread's first call goes the slow way, which registers it: broadcasts
 * must know every thread that writes bits).  Then the word for rights
 * (arch.h) does the rest, or says "no key" and set_valid() runs.
 */
#define ARGS_OK(d, rights) \
	(likely((d) && (unsigned)(rights) < 4 && (d)->magic == MPK_DOMAIN_MAGIC))
#define FAST_OK(d, rights, t) (ARGS_OK(d, rights) && likely((t) = mpk__self))

/* PKRU = (PKRU & ~mask) | bits, under the lock, noted for broadcasts. */
static void reg_update(mpk_reg_t mask, mpk_reg_t bits)
{
	mpk_reg_t old = mpk_arch_reg_update(mask, bits);
	mpk__pub_wrote((old & ~mask) | bits);
}

/* Under the lock, d valid: rights the keyed, the key-winning or the soft
 * way. */
static int set_locked(struct mpk_domain *d, int rights)
{
	__atomic_add_fetch(&mpk_g.tick, 1, __ATOMIC_RELAXED);
	touch(d);
	if (d->key < 0 && mpk_g.backend == MPK_BACKEND_HW && rights != MPK_NONE)
		mpk__key_acquire(d); /* failing, d stays soft */
	if (d->key >= 0) {
		reg_update(mpk_arch_key_mask(d->key), mpk_arch_key_bits(d->key, rights));
		return 0;
	}
	return mpk__soft_set_locked(d, rights);
}

static __attribute__((noinline, cold)) int set_wait(struct mpk_domain *d, int rights)
{
	/* hw: the first slow call registers the thread (broadcasts must know
	 * every thread that writes bits before the fast path lets it in). */
	mpk__thread_register();
	pthread_mutex_lock(&mpk_g.lock);
	/* Re-checked under the lock: a concurrent destroy may have won. */
	int rc = mpk__domain_ok(d) ? set_locked(d, rights) : (errno = EINVAL, -1);
	pthread_mutex_unlock(&mpk_g.lock);
	return rc;
}

static __attribute__((noinline, cold)) int einval(void)
{
	errno = EINVAL;
	return -1;
}

/*
 * Past the fast path with a live handle and rights below 4: a keyless
 * domain, an unregistered thread, or rights 2.  The soft backend's every
 * call comes here, so it is not cold, and it checks nothing twice.  Soft:
 * nothing to change is a thread-local check, no lock, no tick (flat in
 * threads); a change takes d's own lock, not the global.  Only tail
 * calls: the soft no-change return needs no frame.
 */
static __attribute__((noinline)) int set_valid(struct mpk_domain *d, int rights)
{
	if (unlikely(rights == 2))
		return einval();
	if (mpk_g.backend == MPK_BACKEND_SOFT)
		return mpk__soft_holds(d, rights) ? 0 : mpk__soft_set(d, rights);
	return set_wait(d, rights);
}

static __attribute__((noinline, cold)) int set_slow(struct mpk_domain *d, int rights)
{
	if (!mpk__domain_ok(d) || !mpk__rights_ok(rights))
		return einval();
	return set_valid(d, rights);
}

/*
 * hw mpk_set(): 28 instructions on its common path, from entry to ret
 * (`mpkit bench` counts them in the disassembly; docs/scale.md): 10 to
 * check the handle, the rights and the thread, 6 for RDPKRU, the splice and
 * WRPKRU, 3 for the lockdown check of the WRPKRU (issue 10: the value
 * written is compared with the value meant), 2 to note the value written
 * and 2 for the busy flag around it (what lets a broadcast skip a thread
 * soundly), the rest loads and the return.  No branch taken, no call, no
 * lock, no store shared with another thread.  It is not inline in the
 * header: the restartable sequence must be one of the copies the library
 * lists for its signal handler (mpk_restart), the checked WRPKRU one of
 * the sites its gadget scan knows, and the domain's layout stays private.
 */
static inline int set_rights(struct mpk_domain *d, int rights)
{
	struct mpk_thread *t;

	if (unlikely(!ARGS_OK(d, rights)))
		return set_slow(d, rights);
	if (likely((t = mpk__self)) && mpk_arch_fast_set(&d->fast[(unsigned)rights], &t->pub))
		return 0;
	return set_valid(d, rights);
}

MPK_EXPORT int mpk_set(mpk_domain *d, int rights)
{
	return set_rights(d, rights);
}

/* mpk_set() for the library's own callers: the same code (not a copy: its
 * WRPKRU is a site the gadget scan and mpk_restart know), called directly,
 * not through the PLT. */
extern __typeof__(mpk_set) mpk__set __attribute__((alias("mpk_set"), nothrow));

/*
 * The interrupted code's rights, from a signal handler: on hw its PKRU
 * image goes into this handler's register for mpk_set() to act on (the
 * fault callback's way, fault.c), the result back into the frame, and the
 * handler's own value back into the register.  A broadcast (MPK_SIGNAL)
 * edits the same frame: held off between the read and the write, so its
 * edit is neither lost nor undone.
 */
MPK_EXPORT int mpk_set_interrupted(mpk_domain *d, int rights, void *ucontext)
{
	sigset_t hold, was;
	mpk_reg_t own, reg;
	int rc;

	if (!ucontext || !mpk__domain_ok(d) || !mpk__rights_ok(rights))
		return einval();
	if (mpk_g.backend != MPK_BACKEND_HW)
		return mpk__set(d, rights);
	sigemptyset(&hold);
	sigaddset(&hold, MPK_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &hold, &was);
	own = mpk_arch_reg_read();
	if (!mpk_arch_frame_reg_get(ucontext, &reg)) {
		errno = ENOTSUP;
		rc = -1;
	} else {
		mpk_arch_reg_write(reg);
		rc = mpk__set(d, rights);
		if (!rc)
			mpk_arch_frame_reg_set(ucontext, mpk_arch_reg_read());
		mpk_arch_reg_write(own);
	}
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	return rc;
}

MPK_EXPORT int mpk_get(const mpk_domain *d)
{
	if (unlikely(!mpk__domain_ok(d))) {
		errno = EINVAL;
		return -1;
	}
	int k = __atomic_load_n(&d->key, __ATOMIC_ACQUIRE);
	if (likely(k >= 0)) {
		mpk_reg_t reg = mpk_arch_reg_read();
		if (likely(__atomic_load_n(&d->key, __ATOMIC_ACQUIRE) == k))
			return mpk_arch_key_rights(reg, k);
	}
	if (mpk_g.backend != MPK_BACKEND_HW)
		return mpk__soft_get(d);
	/* hw, keyless or moving: ask under the lock, where keys stand still. */
	struct mpk_domain *m = (struct mpk_domain *)d;
	int rights;
	pthread_mutex_lock(&mpk_g.lock);
	if (!mpk__domain_ok(m))
		rights = (errno = EINVAL, -1);
	else if (m->key >= 0)
		rights = mpk_arch_key_rights(mpk_arch_reg_read(), m->key);
	else
		rights = mpk__soft_get(m);
	pthread_mutex_unlock(&mpk_g.lock);
	return rights;
}

static __attribute__((noinline, cold)) mpk_scope enter_slow(struct mpk_domain *d, int rights)
{
	mpk_scope s = { .domain = NULL, .saved = -1 };

	if (!mpk__domain_ok(d) || !mpk__rights_ok(rights)) {
		errno = EINVAL;
		return s;
	}
	int saved = mpk_get(d);
	if (mpk_g.backend == MPK_BACKEND_SOFT && rights != 2)
		return mpk__soft_enter(d, rights, saved); /* a tail call: see there */
	if (set_valid(d, rights))
		return s;
	return (mpk_scope){ .domain = d, .saved = saved };
}

/* hw mpk_enter(): mpk_set()'s path, and the rights held before from the
 * PKRU it read (the same key: no second load of the domain).  mpk_leave():
 * mpk_set() of the saved rights.  Counts: docs/scale.md. */
MPK_EXPORT mpk_scope mpk_enter(mpk_domain *d, int rights)
{
	struct mpk_thread *t;
	mpk_reg_t reg;
	uint32_t keep;

	if (FAST_OK(d, rights, t) &&
	    mpk_arch_fast_enter(&d->fast[(unsigned)rights], &t->pub, &reg, &keep))
		return (mpk_scope){ .domain = d, .saved = mpk_arch_keep_rights(reg, keep) };
	return enter_slow(d, rights);
}

static int leave(mpk_scope *s)
{
	if (unlikely(!s)) {
		errno = EINVAL;
		return -1;
	}
	if (!s->domain)
		return 0; /* a failed enter, or left already: nothing to restore */
	if (mpk_g.backend == MPK_BACKEND_SOFT && ARGS_OK(s->domain, s->saved) && s->saved != 2)
		return mpk__soft_leave(s); /* a tail call: see there */
	int rc = set_rights(s->domain, s->saved);
	if (likely(!rc))
		s->domain = NULL;
	return rc;
}

MPK_EXPORT int mpk_leave(mpk_scope *s)
{
	return leave(s);
}

MPK_EXPORT void mpk__scope_cleanup(mpk_scope *s)
{
	if (s && s->domain)
		leave(s); /* not through the PLT */
}

MPK_EXPORT void mpk__scope_failed(const mpk_scope *s, const char *file, int line)
{
	int err = errno;

	(void)s;
	fprintf(stderr, "%s:%d: MPK_WITH: mpk_enter failed: %s (MPK_WITH_ABORTS is defined)\n",
		file, line, strerror(err));
	abort();
}

/* ---- every thread ---------------------------------------------------- */

MPK_EXPORT int mpk_set_all(mpk_domain *d, int rights)
{
	int rc;

	if (mpk__ensure_init())
		return -1;
	if (!mpk__domain_ok(d) || !mpk__rights_ok(rights)) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&mpk_g.lock);
	if (!mpk__domain_ok(d)) {
		errno = EINVAL;
		rc = -1;
	} else if (d->key >= 0) {
		/* Serialised inside: each request is its own (reg & ~clear)
		 * | set, so concurrent calls on other keys compose. */
		struct mpk_bcast b = { .clear = mpk_arch_key_mask(d->key),
				       .set = mpk_arch_key_bits(d->key, rights),
				       .undo_on_fail = true };
		rc = mpk__broadcast_ex(&b);
	} else {
		rc = mpk__soft_set_all_locked(d, rights);
	}
	pthread_mutex_unlock(&mpk_g.lock);
	return rc;
}

/* ---- saving and restoring -------------------------------------------- */

#define RIGHTS_MAGIC 0x6d706b72u /* "mpkr" */

/*
 * A save holds what differs from none, so both calls cost what the thread
 * holds, not what exists: on hw the PKRU word and each key's owner, plus
 * (both backends) the keyless domains the thread holds more than none to.  Every other domain that lived at the save (uid below
 * next_uid) was held at none: a restore closes those the thread holds
 * more than none to now (its keys and soft.c's list), all in one pass.
 */
struct saved {
	uint32_t magic;
	uint32_t backend;
	mpk_reg_t reg;                                     /* hw: PKRU */
	uint32_t n;                                        /* keyless domains */
	uint64_t next_uid;                                 /* domains of the save: uid below */
	uint64_t uid[MPK_ARCH_NKEYS ? MPK_ARCH_NKEYS : 1];  /* hw: each key's domain, 0 none */
	uint32_t slot[MPK_ARCH_NKEYS ? MPK_ARCH_NKEYS : 1]; /* and its slot */
	struct mpk_rights_soft *e;                         /* keyless domains' rights */
	uint64_t thread;                                   /* who saved, and when: */
	struct mpk__soft_snap snap;                        /* its soft rights' epochs */
};
_Static_assert(sizeof(struct saved) <= sizeof(mpk_rights_t), "mpk_rights_t too small");
_Static_assert(_Alignof(struct saved) <= _Alignof(mpk_rights_t), "mpk_rights_t alignment");

MPK_EXPORT int mpk_rights_save(mpk_rights_t *r)
{
	struct saved *s = (struct saved *)r;

	if (mpk__ensure_init())
		return -1;
	if (!r) {
		errno = EINVAL;
		return -1;
	}
	struct saved n = { .magic = RIGHTS_MAGIC, .backend = (uint32_t)mpk_g.backend };
	pthread_mutex_lock(&mpk_g.lock);
	n.next_uid = mpk_g.next_uid;
	for (int k = 1; k < MPK_ARCH_NKEYS; k++) {
		struct mpk_domain *d = mpk_g.key_owner[k];
		if (d && d->key == k) {
			n.uid[k] = d->uid;
			n.slot[k] = d->slot;
		}
	}
	if (mpk_g.backend == MPK_BACKEND_HW)
		n.reg = mpk_arch_reg_read();
	n.thread = mpk__soft_thread_id();
	n.snap = mpk__soft_snap_take();
	int rc = mpk__soft_save_locked(&n.e, &n.n);
	pthread_mutex_unlock(&mpk_g.lock);
	if (rc)
		return -1;
	*s = n;
	return 0;
}

static struct mpk_domain *live(uint32_t slot, uint64_t uid)
{
	struct mpk_domain *d = slot < mpk_g.nslots ? mpk_g.slots[slot] : NULL;
	return d && uid && d->uid == uid ? d : NULL;
}

/* One saved right to put back; domains that moved between a key and none
 * since the save go the way they are now. */
struct pend {
	struct mpk_domain *d;
	int rights, old;
};

/* Room for what pend_fill() may list. */
static size_t pend_max(const struct saved *s)
{
	return 2 * (MPK_ARCH_NKEYS ? MPK_ARCH_NKEYS : 1) + s->n + mpk__soft_listed_max();
}

struct filling {
	struct pend *p;
	size_t np;
	uint64_t mark, next_uid;
};

/* A keyless domain the thread holds above none now: closed unless saved. */
static void pend_unsaved(struct mpk_domain *d, int rights, void *arg)
{
	struct filling *f = arg;

	(void)rights;
	if (d->uid < f->next_uid && d->restore_mark != f->mark)
		f->p[f->np++] = (struct pend){ d, MPK_NONE, 0 };
}

/* What restoring s changes, into p (room for pend_max()): the saved
 * domains that still live, then the older ones held above none now.  A
 * keyless one whose rights match already is left out.  When the thread
 * that saved restores and none of its soft rights, no base and no key has
 * moved since, no keyless one changes: then only the keys are looked at. */
static size_t pend_fill(const struct saved *s, struct pend *p)
{
	static uint64_t mark; /* under mpk_g.lock */
	struct filling f = { p, 0, ++mark, s->next_uid };
	bool soft_same = s->thread == mpk__soft_thread_id() && mpk__soft_snap_same(&s->snap);

	/* Saved domains that live carry the mark: O(1) membership below. */
	for (int k = 1; k < MPK_ARCH_NKEYS; k++) {
		struct mpk_domain *d = s->uid[k] ? live(s->slot[k], s->uid[k]) : NULL;
		if (d) {
			d->restore_mark = mark;
			p[f.np++] = (struct pend){ d, mpk_arch_key_rights(s->reg, k), 0 };
		}
	}
	for (uint32_t i = 0; i < s->n && !soft_same; i++) {
		struct mpk_domain *d = live(s->e[i].slot, s->e[i].uid);
		if (d) {
			d->restore_mark = mark;
			if (d->key >= 0 || mpk__soft_get(d) != s->e[i].rights)
				p[f.np++] = (struct pend){ d, s->e[i].rights, 0 };
		}
	}
	for (int k = 1; k < MPK_ARCH_NKEYS; k++) {
		struct mpk_domain *d = mpk_g.key_owner[k];
		if (d && d->key == k && d->uid < s->next_uid && d->restore_mark != mark)
			p[f.np++] = (struct pend){ d, MPK_NONE, 0 };
	}
	if (!soft_same)
		mpk__soft_each_held(pend_unsaved, &f);
	return f.np;
}

MPK_EXPORT int mpk_rights_restore(const mpk_rights_t *r)
{
	enum { LOCAL = 48 };
	const struct saved *s = (const struct saved *)r;
	struct pend local[LOCAL], *p = local;
	size_t np, i;
	mpk_reg_t mask = 0, bits = 0;
	int rc = 0, err = 0;

	if (mpk__ensure_init())
		return -1;
	if (!r || s->magic != RIGHTS_MAGIC || s->backend != (uint32_t)mpk_g.backend) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&mpk_g.lock);
	if (pend_max(s) > LOCAL && !(p = mpk__ialloc_array(pend_max(s), sizeof(*p)))) {
		pthread_mutex_unlock(&mpk_g.lock);
		errno = ENOMEM;
		return -1;
	}
	np = pend_fill(s, p);
	/* Keyless ones first (they may fail): all or nothing. */
	for (i = 0; i < np; i++) {
		struct mpk_domain *d = p[i].d;
		if (d->key >= 0) {
			mask |= mpk_arch_key_mask(d->key);
			bits |= mpk_arch_key_bits(d->key, p[i].rights);
			continue;
		}
		p[i].old = mpk__soft_get(d);
		if (mpk__soft_set_locked(d, p[i].rights)) {
			err = errno;
			rc = -1;
			while (i-- > 0)
				if (p[i].d->key < 0)
					mpk__soft_set_locked(p[i].d, p[i].old);
			break;
		}
	}
	/* Under the lock no key changes hands; one restartable write, so a
	 * concurrent revocation is not undone. */
	if (!rc && mask)
		reg_update(mask, bits);
	pthread_mutex_unlock(&mpk_g.lock);
	if (p != local)
		mpk__ifree(p);
	if (rc)
		errno = err;
	return rc;
}

MPK_EXPORT int mpk_rights_dispose(mpk_rights_t *r)
{
	struct saved *s = (struct saved *)r;

	if (!r || s->magic != RIGHTS_MAGIC)
		return 0;
	mpk__ifree(s->e);
	memset(s, 0, sizeof(*s));
	return 0;
}
