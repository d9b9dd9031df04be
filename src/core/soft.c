/* SPDX-License-Identifier: MIT */
/*
 * Soft protection: a domain without a hardware key is protected with
 * mprotect().  Page protections are process-wide, so a region is as open as
 * the most any thread holds (the union).  Each thread remembers its own
 * rights in a thread-local table indexed by domain slot; an entry counts only
 * while its uid matches the domain in that slot, so a recycled slot never
 * inherits rights.  Threads that exit drop what they held.
 *
 * Process-wide rights (mpk_set_all, MPK_DOMAIN_SHARED).  Other threads'
 * tables cannot be reached, so a domain has base rights and a generation:
 * a set_all records the base and bumps the generation, which makes every
 * thread's entry for the domain stale.  A thread's rights are its entry if
 * that entry carries the current generation, else the base: so after a
 * set_all every thread (and every thread created later) holds the base
 * until it sets its own.  The union counts: readers/writers count current
 * entries only (a set_all zeroes them, exiting threads drop only current
 * ones), and the base always counts as one more holder, because some
 * thread, now or later, may hold it and mpkit cannot tell when none does.
 * So after mpk_set_all(d, r) the pages stay at least as open as r until
 * the next mpk_set_all; they are never less open than some thread's rights.
 *
 * Cost.  A no-change mpk_set() is the thread-local check in internal.h, no
 * lock.  A change on the soft backend takes the domain's own lock only
 * (mpk__soft_set), so threads working on different domains do not wait
 * for each other's mprotect(); on hw, keyless domains change under
 * mpk_g.lock too (keys move there).  Each thread lists the slots it holds
 * above none, and the domains with a base above none are listed too: a
 * save, a restore and a thread's exit walk those lists, not every slot.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"
#include "os.h"

/* The steps of a rights change, inline in mpk__soft_set(): it makes its
 * system calls from its own frame (see mpk_os_mprotect_inline), and the
 * steps' calls were a fifth of the instructions of an open+close. */
#define FLAT static inline __attribute__((always_inline))

/* The fault handler reads this in signal context.  Tables are mmap()ed, so
 * that a thread can grow its own in signal context too (an eviction records
 * every thread's rights there, see mpk__soft_hold_signal).  Only the owning
 * thread touches its list: under mpk_g.lock, or in its handler while the
 * broadcasting thread holds that lock. */
__thread struct mpk_soft_thread mpk__soft_t __attribute__((tls_model("initial-exec")));
#define T (&mpk__soft_t)
uint64_t mpk__soft_gepoch;

/* One of this thread's entries changes (relaxed: only the thread itself,
 * or its own signal handler, reads it). */
FLAT void moved(void)
{
	__atomic_store_n(&T->epoch, T->epoch + 1, __ATOMIC_RELAXED);
}
/* Tables replaced in signal context: the interrupted code may still read
 * the old one, so it is unmapped later, in ordinary context. */
#define RETIRED_MAX 4
static __thread struct { struct mpk_soft_held *p; uint32_t cap; } t_retired[RETIRED_MAX]
	__attribute__((tls_model("initial-exec")));
static __thread bool t_any_retired __attribute__((tls_model("initial-exec")));
/* Set once the thread's exit handler ran: it holds nothing from then on. */
static __thread bool t_exiting __attribute__((tls_model("initial-exec")));

/* A number no other thread of the process has had, given at its first
 * ask (rights.c: which thread a save belongs to; TLS addresses recur). */
static __thread uint64_t t_id __attribute__((tls_model("initial-exec")));
static uint64_t last_id;

uint64_t mpk__soft_thread_id(void)
{
	if (!t_id)
		t_id = __atomic_add_fetch(&last_id, 1, __ATOMIC_RELAXED);
	return t_id;
}

/* Keyless domains whose base is not MPK_NONE: every thread that has no
 * entry of its own holds more than none to them (under mpk_g.lock). */
static struct mpk_domain *based;
static uint32_t nbased;

static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

FLAT int prot_of(int readers, int writers)
{
	if (writers)
		return PROT_READ | PROT_WRITE;
	return readers ? PROT_READ : PROT_NONE;
}

FLAT int soft_prot(const struct mpk_domain *d)
{
	return prot_of(d->readers + (d->base == MPK_READ), d->writers + (d->base == MPK_RW));
}

int mpk__soft_prot(const struct mpk_domain *d)
{
	return soft_prot(d);
}

/* This thread's entry for d, if it is current (not reset by a set_all). */
FLAT struct mpk_soft_held *current(const struct mpk_domain *d)
{
	if (d->slot < T->cap && T->held[d->slot].uid == d->uid &&
	    T->held[d->slot].gen == __atomic_load_n(&d->gen, __ATOMIC_RELAXED))
		return &T->held[d->slot];
	return NULL;
}

/* d's base becomes rights, and d joins or leaves the based list. */
static void set_base(struct mpk_domain *d, int rights)
{
	__atomic_store_n(&d->base, rights, __ATOMIC_RELAXED);
	if (rights != MPK_NONE && !d->based_pprev) {
		d->based_next = based;
		if (based)
			based->based_pprev = &d->based_next;
		based = d;
		d->based_pprev = &based;
		nbased++;
	} else if (rights == MPK_NONE && d->based_pprev) {
		*d->based_pprev = d->based_next;
		if (d->based_next)
			d->based_next->based_pprev = d->based_pprev;
		d->based_pprev = NULL;
		nbased--;
	}
}

FLAT void untrack(uint32_t s)
{
	uint32_t i = T->held[s].pos - 1, last = T->list[--T->n];

	T->list[i] = last;
	T->held[last].pos = i + 1;
	T->held[s].pos = 0;
}

/* This thread's entry for d becomes rights (room reserved); listed while
 * it holds more than none. */
FLAT void record(struct mpk_domain *d, int rights)
{
	struct mpk_soft_held *h = &T->held[d->slot];

	moved();
	h->uid = d->uid;
	h->gen = d->gen;
	h->rights = rights;
	if (rights != MPK_NONE && !h->pos) {
		T->list[T->n++] = d->slot;
		h->pos = T->n;
	} else if (rights == MPK_NONE && h->pos) {
		untrack(d->slot);
	}
}

/* The base is published after apply() and before the generation moves: a
 * thread that sees either the new generation or the new base finds the
 * pages already as open as that base (set_all below). */
static void publish(struct mpk_domain *d)
{
	__atomic_store_n(&d->base_pub, d->base, __ATOMIC_RELEASE);
	__atomic_add_fetch(&mpk__soft_gepoch, 1, __ATOMIC_RELEASE);
}

static void next_gen(struct mpk_domain *d)
{
	publish(d);
	__atomic_store_n(&d->gen, d->gen + 1, __ATOMIC_RELEASE);
}

int mpk__soft_get(const struct mpk_domain *d)
{
	struct mpk_soft_held *h = current(d);
	/* mpk_get() reads without the lock: a set_all may be changing them. */
	return h ? h->rights : __atomic_load_n(&d->base, __ATOMIC_RELAXED);
}

/* mprotect every region to prot; on failure put back those already done. */
FLAT int apply(struct mpk_domain *d, int prot)
{
	struct mpk_region *r, *done;

	if (prot == d->prot || d->key >= 0) /* a keyed domain's pages stay RW */
		return 0;
	for (r = d->regions; r; r = r->next)
		if (mpk_os_mprotect_inline((void *)r->start, r->len, mpk__region_prot(r, prot, 0)))
			goto undo;
	__atomic_store_n(&d->prot, prot, __ATOMIC_RELEASE); /* code_region.c reads it in its fault hook */
	mpk__registry_soft(d, prot);
	return 0;
undo:;
	int err = errno;
	for (done = d->regions; done != r; done = done->next)
		mpk_os_mprotect((void *)done->start, done->len, mpk__region_prot(done, d->prot, 0));
	errno = err;
	return -1;
}

/* Counts change under mpk_g.lock; in signal context too (the thread that
 * holds the lock waits for the handler), hence atomic. */
FLAT void count(struct mpk_domain *d, int rights, int delta)
{
	if (rights == MPK_RW)
		__atomic_add_fetch(&d->writers, delta, __ATOMIC_RELAXED);
	else if (rights == MPK_READ)
		__atomic_add_fetch(&d->readers, delta, __ATOMIC_RELAXED);
}

static void thread_exit(void *arg);

static void make_exit_key(void)
{
	pthread_key_create(&exit_key, thread_exit);
}

/* cap entries, then the list (cap slots at most). */
static size_t table_bytes(uint32_t cap)
{
	return ((size_t)cap * (sizeof(struct mpk_soft_held) + sizeof(uint32_t)) + 4095) & ~(size_t)4095;
}

static void table_unmap(struct mpk_soft_held *p, uint32_t cap)
{
	if (p)
		munmap(p, table_bytes(cap));
}

/* Room for slot in this thread's table; async-signal-safe (mmap only) when
 * in_signal, else it also unmaps the tables retired in signal context.
 * reserve() below is every soft change's way here: with room and nothing
 * retired it reads two thread-local words and does not call. */
static int reserve_slow(uint32_t slot, bool in_signal)
{
	if (!in_signal && unlikely(t_any_retired)) {
		t_any_retired = false;
		__atomic_signal_fence(__ATOMIC_SEQ_CST); /* a handler may retire one more */
		for (int i = 0; i < RETIRED_MAX; i++) {
			table_unmap(t_retired[i].p, t_retired[i].cap);
			t_retired[i].p = NULL;
		}
	}
	if (likely(slot < T->cap))
		return 0;
	uint32_t cap = T->cap ? T->cap : 16;
	while (cap <= slot)
		cap *= 2;
	struct mpk_soft_held *n = mmap(NULL, table_bytes(cap), PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (n == MAP_FAILED)
		return -1;
	uint32_t *list = (uint32_t *)(n + cap);
	if (T->held) {
		memcpy(n, T->held, T->cap * sizeof(*n));
		memcpy(list, T->list, T->n * sizeof(*list));
	}
	struct mpk_soft_held *old = T->held;
	uint32_t old_cap = T->cap;
	/* Publish the larger table before dropping the old one: the fault
	 * handler may read it at any moment on this thread. */
	__atomic_store_n(&T->held, n, __ATOMIC_RELEASE);
	__atomic_store_n(&T->list, list, __ATOMIC_RELEASE);
	__atomic_store_n(&T->cap, cap, __ATOMIC_RELEASE);
	if (!in_signal) {
		table_unmap(old, old_cap);
		pthread_once(&exit_once, make_exit_key);
	} else if (old) {
		int i = 0;
		while (i < RETIRED_MAX && t_retired[i].p)
			i++;
		if (i < RETIRED_MAX) /* else leaked: four growths in handlers */
			t_retired[i].p = old, t_retired[i].cap = old_cap, t_any_retired = true;
	}
	/* Only here: a thread's first table, or one after its exit handler
	 * ran (which leaves cap 0), arms the handler.  glibc and musl store
	 * a low key's value in the thread descriptor: no lock, no allocation,
	 * so this is safe in a handler too. */
	pthread_setspecific(exit_key, (void *)1);
	return 0;
}

FLAT int reserve(uint32_t slot, bool in_signal)
{
	if (likely(slot < T->cap) && (in_signal || likely(!t_any_retired)))
		return 0;
	return reserve_slow(slot, in_signal);
}

/* d->lock held. */
FLAT int set_held(struct mpk_domain *d, int rights)
{
	/* A stale entry (or none) means this thread held the base, which is
	 * not in the counts: only a current entry is taken out. */
	struct mpk_soft_held *h = current(d);
	int counted = h ? h->rights : MPK_NONE;

	if ((h ? h->rights : d->base) == rights)
		return 0; /* holds them already (its own, or the base) */
	if (reserve(d->slot, false))
		return -1;
	count(d, counted, -1);
	count(d, rights, +1);
	if (apply(d, soft_prot(d))) {
		count(d, rights, -1);
		count(d, counted, +1);
		return -1;
	}
	record(d, rights);
	return 0;
}

int mpk__soft_set_locked(struct mpk_domain *d, int rights)
{
	/* Holds them already: no lock (the base changes under mpk_g.lock,
	 * which the caller holds; the entry is this thread's). */
	struct mpk_soft_held *h = current(d);
	if ((h ? h->rights : d->base) == rights)
		return 0;
	mpk__lock(&d->lock);
	int rc = set_held(d, rights);
	mpk__unlock(&d->lock);
	return rc;
}

/* A change takes d's lock alone: a fork waits for it by taking every
 * domain's lock (mpk__domains_lock), so a change costs no shared counter. */
FLAT int change(struct mpk_domain *d, int rights)
{
	mpk__lock(&d->lock);
	/* Checked again: a destroy marks d dead under its lock. */
	int rc = mpk__domain_ok(d) ? set_held(d, rights) : (errno = EINVAL, -1);
	mpk__unlock(&d->lock);
	return rc;
}

int mpk__soft_set(struct mpk_domain *d, int rights)
{
	return change(d, rights);
}

/* mpk_enter() and mpk_leave() on the soft backend, each the last call of
 * its caller: the scope is made or cleared here, in the frame that made
 * the system call, so that no frame of rights.c's is left above it. */
mpk_scope mpk__soft_enter(struct mpk_domain *d, int rights, int saved)
{
	if (!mpk__soft_holds(d, rights) && change(d, rights))
		return (mpk_scope){ .domain = NULL, .saved = -1 };
	return (mpk_scope){ .domain = d, .saved = saved };
}

int mpk__soft_leave(mpk_scope *s)
{
	struct mpk_domain *d = s->domain;

	if (!mpk__soft_holds(d, s->saved) && change(d, s->saved))
		return -1;
	s->domain = NULL;
	return 0;
}

int mpk__soft_set_all_locked(struct mpk_domain *d, int rights)
{
	mpk__lock(&d->lock);
	int base = d->base, readers = d->readers, writers = d->writers, rc = 0;

	set_base(d, rights);
	d->readers = d->writers = 0;
	if (apply(d, mpk__soft_prot(d))) {
		set_base(d, base);
		d->readers = readers;
		d->writers = writers;
		rc = -1;
	} else {
		next_gen(d); /* every entry, this thread's too, is stale: all hold base */
	}
	mpk__unlock(&d->lock);
	return rc;
}

uint32_t mpk__soft_listed_max(void)
{
	return T->n + nbased;
}

void mpk__soft_each_held(void (*fn)(struct mpk_domain *d, int rights, void *arg), void *arg)
{
	/* The thread's own entries; stale ones (set_all, key moves, dead
	 * domains) and none are dropped from the list on the way. */
	for (uint32_t i = 0; i < T->n;) {
		uint32_t s = T->list[i];
		struct mpk_domain *d = s < mpk_g.nslots ? mpk_g.slots[s] : NULL;
		struct mpk_soft_held *h = d ? current(d) : NULL;
		if (!h || h->rights == MPK_NONE) {
			untrack(s); /* the last one moves to i */
			continue;
		}
		if (d->key < 0)
			fn(d, h->rights, arg);
		i++;
	}
	/* Bases it holds for want of an entry of its own. */
	for (struct mpk_domain *d = based; d; d = d->based_next)
		if (d->key < 0 && !current(d))
			fn(d, d->base, arg);
}

struct listing {
	struct mpk_rights_soft *e;
	uint32_t k;
};

static void list_one(struct mpk_domain *d, int rights, void *arg)
{
	struct listing *l = arg;
	l->e[l->k++] = (struct mpk_rights_soft){ .slot = d->slot, .uid = d->uid, .rights = rights };
}

int mpk__soft_save_locked(struct mpk_rights_soft **out, uint32_t *n)
{
	uint32_t max = mpk__soft_listed_max(), k;

	*out = NULL;
	*n = 0;
	if (!max)
		return 0;
	struct mpk_rights_soft *e = mpk__ialloc_array(max, sizeof(*e));
	if (!e) {
		errno = ENOMEM;
		return -1;
	}
	struct listing l = { e, 0 };
	mpk__soft_each_held(list_one, &l);
	if (!(k = l.k)) {
		mpk__ifree(e);
		return 0;
	}
	*out = e;
	*n = k;
	return 0;
}

int mpk__prot_of_rights(int rights)
{
	return rights == MPK_RW ? PROT_READ | PROT_WRITE : rights == MPK_READ ? PROT_READ : PROT_NONE;
}

void mpk__soft_keyed(struct mpk_domain *d)
{
	d->readers = d->writers = 0;
	set_base(d, MPK_NONE);
	next_gen(d); /* entries from the soft period are done with */
	d->prot = PROT_READ | PROT_WRITE;
}

void mpk__soft_evict_prepare(void)
{
	pthread_once(&exit_once, make_exit_key);
}

void mpk__soft_evicted(struct mpk_domain *d, int rights)
{
	/* Nobody holds anything yet: mpk__soft_hold_signal() then counts
	 * each thread in, with the rights it held under the key. */
	next_gen(d);
	d->readers = d->writers = 0;
	set_base(d, MPK_NONE);
	d->prot = mpk__prot_of_rights(rights);
	publish(d);
}

bool mpk__soft_hold_signal(struct mpk_domain *d, int rights)
{
	if (t_exiting)
		return true; /* past its exit handler: holds nothing */
	if (reserve(d->slot, true))
		return false;
	record(d, rights);
	count(d, rights, +1);
	return true;
}

void mpk__soft_evicted_loose(struct mpk_domain *d, int rights)
{
	set_base(d, rights);
	publish(d);
}

void mpk__soft_forget(struct mpk_domain *d)
{
	/* Other threads' entries die with the uid; only the counts go. */
	if (d->slot < T->cap && T->held[d->slot].uid == d->uid) {
		moved();
		T->held[d->slot].rights = MPK_NONE;
		if (T->held[d->slot].pos)
			untrack(d->slot);
	}
	d->readers = d->writers = 0;
	set_base(d, MPK_NONE);
	publish(d);
}

static void thread_exit(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mpk_g.lock);
	for (uint32_t i = 0; i < T->n; i++) {
		uint32_t s = T->list[i];
		struct mpk_soft_held *h = &T->held[s];
		if (h->rights == MPK_NONE || s >= mpk_g.nslots)
			continue;
		struct mpk_domain *d = mpk_g.slots[s];
		if (!d || d->uid != h->uid)
			continue;
		mpk__lock(&d->lock);
		if (d->gen == h->gen) {
			count(d, h->rights, -1);
			/* If this fails the region stays more open than
			 * needed, never less: nobody loses access. */
			apply(d, mpk__soft_prot(d));
		}
		mpk__unlock(&d->lock);
	}
	t_exiting = true;
	pthread_mutex_unlock(&mpk_g.lock);
	struct mpk_soft_held *old = T->held;
	uint32_t old_cap = T->cap;
	moved();
	T->cap = 0;
	T->n = 0;
	T->held = NULL;
	T->list = NULL;
	table_unmap(old, old_cap);
	for (int i = 0; i < RETIRED_MAX; i++)
		table_unmap(t_retired[i].p, t_retired[i].cap);
}

/*
 * fork() and mpk_audit(): every live domain's lock, taken or released, with
 * mpk_g.lock held (no domain comes or goes, and nobody else takes two of
 * them).  Whoever holds mpk_g.lock takes a domain's lock after it, and a
 * soft rights change holds a domain's lock alone; so once the fork holds
 * them all, no change is half done, and the child makes them anew.
 */
static void each_lock(void (*fn)(struct mpk_domain *d))
{
	for (uint32_t i = 0; i < mpk_g.nslots; i++)
		if (mpk_g.slots[i])
			fn(mpk_g.slots[i]);
}

static void lock_one(struct mpk_domain *d)
{
	mpk__lock(&d->lock);
}

static void unlock_one(struct mpk_domain *d)
{
	mpk__unlock(&d->lock);
}

static void renew_one(struct mpk_domain *d)
{
	d->lock = (struct mpk_lock){ 0 };
}

void mpk__domains_lock(void)
{
	each_lock(lock_one);
}

void mpk__domains_unlock(void)
{
	each_lock(unlock_one);
}

void mpk__domains_child(void)
{
	each_lock(renew_one);
}
