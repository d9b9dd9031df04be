/* SPDX-License-Identifier: MIT */
/*
 * The guarded libraries' heap blocks by address (docs/guard.md, "Heap
 * blocks"), so that a fault report names the block an address is in:
 * its start, the size the library asked for, the offset.  guard_heap.c
 * records every block it hands out from a library's heap and forgets it
 * before the block goes back; the fault callback asks, in a signal
 * handler.  mpkit's heap knows its blocks too, but finding one from an
 * interior address there takes the arena's lock (which the faulting
 * thread or another may hold) and opens the sealed metadata, and is not
 * in the public API: the helper keeps its own index of what it already
 * sees.  It names only; free() and realloc() never ask it.
 *
 * Blocks up to SMALL bytes sit in an open-addressing table keyed by start
 * (linear probing, deletion by backward shift: no tombstones); a lookup
 * walks back from the address 16 bytes at a time (mpkit's blocks are
 * 16-aligned) to the nearest start, at most SMALL bytes back.  Bigger
 * blocks sit in a short array scanned whole.  Writers take a spin lock;
 * a reader takes none: a sequence count, odd while a writer changes
 * either, tells it to read again.  Both grow into new mappings (never
 * malloc), the old ones kept mapped, as a reader may still be in them.
 *
 * Recorded blocks are always live (added after the heap handed one out,
 * forgotten before it goes back), so "a is in block B" holds whenever the
 * read was consistent.  "a is in no block" holds only if no heap call of
 * these was under way from before the lookup to after it (a block handed
 * out but not yet recorded, say): a second count, of calls under way and
 * calls done, says so; if not, or if a block ever went unrecorded, the
 * answer is "not known", never a guess.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>

#include "guard.h"
#include "spin.h"

#define SMALL ((size_t)64 << 10) /* bigger blocks: the array */
#define BITS0 12                 /* the table's first size: 4096 slots */
#define BIGS0 64

struct ent {
	uintptr_t p; /* 0: empty */
	size_t n;
};
struct table {
	unsigned bits;
	size_t live;
	struct ent e[];
};
struct bigs {
	size_t cap, n;
	struct ent e[];
};

static struct table *tab;
static struct bigs *bigs;
static volatile int wlock;
static unsigned long seq;    /* odd while tab or bigs change */
static unsigned long flight; /* low 32 bits: calls under way; above: calls done */
static int lost;             /* a block went unrecorded: "in no block" not known */
#define ACTIVE 0xffffffffUL

/* fork(): no thread of the child holds the lock; a call under way in a
 * thread the child lost leaves a block recorded or not. */
static void fork_prepare(void)
{
	mpk__spin_lock(&wlock);
}

static void fork_parent(void)
{
	mpk__spin_unlock(&wlock);
}

static void fork_child(void)
{
	if (__atomic_load_n(&flight, __ATOMIC_RELAXED) & ACTIVE)
		__atomic_store_n(&lost, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&flight, 0, __ATOMIC_RELAXED);
	mpk__spin_unlock(&wlock);
}

void guard_blocks_start(void)
{
	static int once;

	if (!__atomic_exchange_n(&once, 1, __ATOMIC_ACQ_REL))
		(void)pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static void *map(size_t len)
{
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return m == MAP_FAILED ? NULL : m;
}

static inline size_t home(uintptr_t p, unsigned bits)
{
	return (size_t)(((p >> 4) * 0x9e3779b97f4a7c15ull) >> (64 - bits));
}

static inline uintptr_t ld(const uintptr_t *w)
{
	return __atomic_load_n(w, __ATOMIC_RELAXED);
}

static inline void st(uintptr_t *w, uintptr_t v)
{
	__atomic_store_n(w, v, __ATOMIC_RELAXED);
}

/* Writers, lock held, between write_begin() and write_end(). */
static void write_begin(void)
{
	__atomic_store_n(&seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static void write_end(void)
{
	__atomic_store_n(&seq, seq + 1, __ATOMIC_RELEASE);
}

static void put_in(struct table *t, uintptr_t p, size_t n)
{
	size_t mask = ((size_t)1 << t->bits) - 1, i = home(p, t->bits);

	while (ld(&t->e[i].p))
		i = (i + 1) & mask;
	st(&t->e[i].n, n);
	st(&t->e[i].p, p);
	t->live++;
}

/* A table twice as big with t's blocks, or NULL. */
static struct table *grown(const struct table *t)
{
	unsigned bits = t ? t->bits + 1 : BITS0;
	struct table *g = map(sizeof(*g) + (sizeof(struct ent) << bits));

	if (!g)
		return NULL;
	g->bits = bits;
	for (size_t i = 0; t && i < (size_t)1 << t->bits; i++)
		if (t->e[i].p)
			put_in(g, t->e[i].p, t->e[i].n);
	return g;
}

static int add_big(uintptr_t p, size_t n)
{
	struct bigs *b = bigs;

	if (!b || b->n == b->cap) {
		size_t cap = b ? b->cap * 2 : BIGS0;
		struct bigs *g = map(sizeof(*g) + cap * sizeof(struct ent));
		if (!g)
			return -1;
		g->cap = cap;
		if (b) {
			memcpy(g->e, b->e, b->n * sizeof(struct ent));
			g->n = b->n;
		}
		__atomic_store_n(&bigs, g, __ATOMIC_RELEASE);
		b = g;
	}
	st(&b->e[b->n].n, n);
	st(&b->e[b->n].p, p);
	__atomic_store_n(&b->n, b->n + 1, __ATOMIC_RELEASE);
	return 0;
}

/* Lock held. */
static void add(uintptr_t p, size_t n)
{
	int ok = 0;

	write_begin();
	if (p & 15)
		; /* the walk steps 16 bytes: such a start is never found */
	else if (n > SMALL)
		ok = !add_big(p, n);
	else {
		struct table *t = tab;
		if (!t || 2 * (t->live + 1) > (size_t)1 << t->bits) {
			struct table *g = grown(t);
			if (g)
				__atomic_store_n(&tab, g, __ATOMIC_RELEASE);
			t = g ? g : t;
		}
		if (t && 2 * (t->live + 1) <= (size_t)1 << t->bits) {
			put_in(t, p, n);
			ok = 1;
		}
	}
	if (!ok)
		__atomic_store_n(&lost, 1, __ATOMIC_RELAXED);
	write_end();
}

/* Slot i emptied: the entries after it that probed past it move back. */
static void shift_back(struct table *t, size_t i)
{
	size_t mask = ((size_t)1 << t->bits) - 1, j = i;

	for (;;) {
		j = (j + 1) & mask;
		if (!t->e[j].p)
			break;
		size_t k = home(t->e[j].p, t->bits);
		/* j's entry stays if its home lies cyclically in (i, j]. */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		st(&t->e[i].n, t->e[j].n);
		st(&t->e[i].p, t->e[j].p);
		i = j;
	}
	st(&t->e[i].p, 0);
}

/* Lock held: the size of block p, forgotten, or -1. */
static size_t del(uintptr_t p)
{
	size_t n = (size_t)-1;

	write_begin();
	struct table *t = tab;
	struct bigs *b = bigs;
	if (t) {
		size_t mask = ((size_t)1 << t->bits) - 1;
		for (size_t i = home(p, t->bits); t->e[i].p; i = (i + 1) & mask)
			if (t->e[i].p == p) {
				n = t->e[i].n;
				shift_back(t, i);
				t->live--;
				break;
			}
	}
	for (size_t i = 0; n == (size_t)-1 && b && i < b->n; i++)
		if (b->e[i].p == p) {
			n = b->e[i].n;
			st(&b->e[i].n, b->e[b->n - 1].n);
			st(&b->e[i].p, b->e[b->n - 1].p);
			__atomic_store_n(&b->n, b->n - 1, __ATOMIC_RELEASE);
		}
	write_end();
	return n;
}

/* Each takes the lock once (a malloc + free pair of library blocks: four
 * locked instructions); the count of calls under way changes under it,
 * before the table does on the way in, after it on the way out. */
size_t guard_blocks_begin(const void *forget)
{
	size_t n = (size_t)-1;

	mpk__spin_lock(&wlock);
	__atomic_store_n(&flight, flight + 1, __ATOMIC_RELEASE);
	if (forget)
		n = del((uintptr_t)forget);
	mpk__spin_unlock(&wlock);
	return n;
}

void guard_blocks_end(const void *p, size_t n)
{
	mpk__spin_lock(&wlock);
	if (p)
		add((uintptr_t)p, n);
	__atomic_store_n(&flight, flight + ACTIVE, __ATOMIC_RELEASE); /* one fewer under way, one more done */
	mpk__spin_unlock(&wlock);
}

/* The size of the block that starts at p, or -1: a probe bounded by the
 * table's length, as a reader may race a writer. */
static size_t size_at(const struct table *t, uintptr_t p)
{
	size_t mask = ((size_t)1 << t->bits) - 1, i = home(p, t->bits);

	for (size_t k = 0; k <= mask; k++, i = (i + 1) & mask) {
		uintptr_t q = ld(&t->e[i].p);
		if (!q)
			break;
		if (q == p)
			return ld(&t->e[i].n);
	}
	return (size_t)-1;
}

/* One read of the index: b filled, kind IN, PAST or FREE.  PAST: the
 * nearest block below a, a small one starting within SMALL bytes or a
 * big one ending within SMALL bytes. */
static void look(uintptr_t a, struct guard_block *b)
{
	const struct bigs *bg = __atomic_load_n(&bigs, __ATOMIC_ACQUIRE);
	const struct table *t = __atomic_load_n(&tab, __ATOMIC_ACQUIRE);
	size_t nb = bg ? __atomic_load_n(&bg->n, __ATOMIC_ACQUIRE) : 0;

	b->kind = GUARD_BLOCK_FREE;
	b->start = 0;
	for (size_t i = 0; i < nb && i < bg->cap; i++) {
		uintptr_t p = ld(&bg->e[i].p);
		size_t n = ld(&bg->e[i].n);
		if (a >= p && a - p < n) {
			b->kind = GUARD_BLOCK_IN, b->start = p, b->size = n;
			return;
		}
		if (a >= p && a - p - n < SMALL && p > b->start)
			b->kind = GUARD_BLOCK_PAST, b->start = p, b->size = n;
	}
	if (!t)
		return;
	for (uintptr_t p = a & ~(uintptr_t)15; p > b->start && a - p < SMALL; p -= 16) {
		size_t n = size_at(t, p);
		if (n == (size_t)-1)
			continue;
		b->kind = a - p < n ? GUARD_BLOCK_IN : GUARD_BLOCK_PAST;
		b->start = p, b->size = n;
		return;
	}
}

void guard_blocks_find(uintptr_t a, struct guard_block *b)
{
	for (int try = 0; try < 8; try++) {
		unsigned long f1 = __atomic_load_n(&flight, __ATOMIC_SEQ_CST);
		unsigned long s1 = __atomic_load_n(&seq, __ATOMIC_ACQUIRE);
		if (s1 & 1) {
			sched_yield();
			continue;
		}
		look(a, b);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&seq, __ATOMIC_RELAXED) != s1)
			continue;
		if (b->kind == GUARD_BLOCK_IN)
			return;
		/* In no block, or past one's end: only if no call was under way. */
		unsigned long f2 = __atomic_load_n(&flight, __ATOMIC_SEQ_CST);
		if (!(f1 & ACTIVE) && f1 == f2 && !__atomic_load_n(&lost, __ATOMIC_RELAXED))
			return;
		if (__atomic_load_n(&lost, __ATOMIC_RELAXED))
			break;
		sched_yield();
	}
	b->kind = GUARD_BLOCK_UNKNOWN;
}
