/* SPDX-License-Identifier: MIT */
/*
 * The drop-in's internal allocator: what mpkit itself allocates in a
 * static program's libmpkit-malloc.o (its objects are linked with --wrap,
 * so their malloc/calloc/realloc/free land here), whatever the C library or ld.so
 * allocates before the heap exists or while a thread is inside an mpkit
 * call (the heap is not reentrant: a nested call could wait on a lock its
 * own thread holds), and blocks the heap cannot give (alignment beyond
 * 2 MiB).  Power-of-two size classes in one reserved range, committed as
 * it grows, so that a pointer's owner is known from its address alone.
 * Never calls the process's allocator; its one lock is a leaf.
 *
 * Its bookkeeping is out of line and sealed: nothing in a block, freed
 * or live, is read (no header, no free-list link), so a write after free
 * or an overflow changes nothing it believes.  A table beside the blocks
 * says for each 32-byte granule whether a block starts there, its class,
 * whether it is live, where its user pointer is and the next free block of
 * its class; the table and the free lists' heads are read-only but while
 * a call holds the lock (two mprotect() a call: the path is rare), and
 * where they are is in a page of its own, read-only once set.  So free()
 * of a pointer that starts no live block (twice, interior, forged) is
 * named and aborts, whatever the attacker wrote into blocks or .bss.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "malloc.h"
#include "../shared/spin.h"

#define BOOT_RESERVE MPK__BOOT_RESERVE
#define BOOT_COMMIT ((size_t)1 << 20)
#define BOOT_MIN_SHIFT 5
#define BOOT_GRAIN ((size_t)1 << BOOT_MIN_SHIFT)
#define BOOT_CLASSES 32                /* 32 B .. 2^36 B: bounded by the reserve */
#define BOOT_PAGE MPK__BOOT_PAGE
#define BOOT_TABLE (BOOT_RESERVE / BOOT_GRAIN * sizeof(uint64_t))
#define BOOT_STATE BOOT_PAGE           /* the state's page, before the table */

/*
 * A granule's entry.  A block's first granule: START, its class, LIVE
 * while handed out, the user pointer's distance from the block (in
 * granules) and, while free, the next free block of its class (its
 * granule + 1, 0 ends the list).  The user pointer's granule, when it is
 * not the block's first: BACK and the block's granule.
 */
#define E_START 1ull
#define E_LIVE 2ull
#define E_BACK 4ull
#define E_CLS(e) ((unsigned)((e) >> 3) & 31)
#define E_OFF(e) ((size_t)((e) >> 8) & ((1ull << 28) - 1))
#define E_NEXT(e) ((size_t)((e) >> 36))
#define E_MAKE(flags, cls, off, next) \
	((flags) | (uint64_t)(cls) << 3 | (uint64_t)(off) << 8 | (uint64_t)(next) << 36)

struct boot_state {
	size_t used, committed;          /* bump pointer, RW prefix of the blocks */
	size_t free[BOOT_CLASSES];       /* first free block's granule + 1 */
};

/* Where everything is: set once, then read-only (malloc.h). */
union mpk__boot_fixed mpk__boot_fixed __attribute__((aligned(BOOT_PAGE))) = { .f.blocks = MPK__BOOT_NONE };
/* Both in writable data: the lock rewritten to free lets two calls write
 * the table at once (a race to win; one may also fault as the other
 * seals it), and the wipe flag only says whether free zeroes a block,
 * which an attacker who reads memory could read before the free. */
static volatile int lock;
bool mpk__boot_wipe;

/* A spin lock, not a mutex: it works before libc is ready and after fork
 * needs nothing but a reset (atfork handlers, malloc.c). */
void mpk__boot_lock(void)
{
	mpk__spin_lock(&lock);
}

void mpk__boot_unlock(void)
{
	mpk__spin_unlock(&lock);
}

/* The state and table writable (on) or read-only again, lock held. */
static void unseal(bool on)
{
	if (mprotect(mpk__boot_fixed.f.st, BOOT_STATE + BOOT_TABLE, on ? PROT_READ | PROT_WRITE : PROT_READ))
		mpk__malloc_die(on ? "the internal allocator's table cannot be written (mprotect)"
				   : "the internal allocator's table cannot be sealed (mprotect)");
}

/* The reserve, its table and the fixed page, once (lock held): 0 or -1. */
static int setup(void)
{
	char *m = mmap(NULL, BOOT_STATE + BOOT_TABLE + BOOT_RESERVE, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return -1;
	if (mprotect(m, BOOT_STATE + BOOT_TABLE, PROT_READ)) {
		munmap(m, BOOT_STATE + BOOT_TABLE + BOOT_RESERVE);
		return -1;
	}
	mpk__boot_fixed.f.st = (struct boot_state *)m;
	mpk__boot_fixed.f.table = (uint64_t *)(m + BOOT_STATE);
	__atomic_store_n(&mpk__boot_fixed.f.blocks, m + BOOT_STATE + BOOT_TABLE, __ATOMIC_RELEASE);
	if (mprotect(&mpk__boot_fixed, sizeof(mpk__boot_fixed), PROT_READ))
		mpk__malloc_die("the internal allocator's fixed page cannot be sealed (mprotect)");
	return 0;
}

/* A fresh block of class c (lock held, state writable), or NULL. */
static char *carve(unsigned c)
{
	struct boot_state *st = mpk__boot_fixed.f.st;
	size_t len = (size_t)1 << (c + BOOT_MIN_SHIFT);
	char *base = mpk__boot_fixed.f.blocks;

	/* Blocks are aligned to their size (up to a page): aligned requests
	 * waste less. */
	size_t at = (st->used + (len < 4096 ? len : 4096) - 1) & ~((len < 4096 ? len : 4096) - 1);
	if (at > BOOT_RESERVE || len > BOOT_RESERVE - at)
		return NULL;
	if (at + len > st->committed) {
		size_t want = (at + len - st->committed + BOOT_COMMIT - 1) & ~(BOOT_COMMIT - 1);
		if (want > BOOT_RESERVE - st->committed)
			want = BOOT_RESERVE - st->committed;
		if (mprotect(base + st->committed, want, PROT_READ | PROT_WRITE))
			return NULL;
		st->committed += want;
	}
	st->used = at + len;
	return base + at;
}

void *mpk__boot_alloc(size_t size, size_t align)
{
	if (align < 16)
		align = 16;
	if (size > ((size_t)1 << 40) || align > ((size_t)1 << 30)) {
		errno = ENOMEM;
		return NULL;
	}
	/* Blocks are 32-aligned at least: a larger alignment may need room. */
	size_t need = (size ? size : 1) + (align > BOOT_GRAIN ? align : 0);
	unsigned c = 0;
	while (((size_t)1 << (c + BOOT_MIN_SHIFT)) < need)
		c++;
	if (c >= BOOT_CLASSES) {
		errno = ENOMEM;
		return NULL;
	}
	mpk__boot_lock();
	if (mpk__boot_fixed.f.blocks == MPK__BOOT_NONE && setup()) {
		mpk__boot_unlock();
		errno = ENOMEM;
		return NULL;
	}
	struct boot_state *st = mpk__boot_fixed.f.st;
	uint64_t *tab = mpk__boot_fixed.f.table;
	char *base = mpk__boot_fixed.f.blocks, *blk;
	unseal(true);
	size_t g = st->free[c];
	if (g) {
		g--;
		st->free[c] = E_NEXT(tab[g]);
		blk = base + g * BOOT_GRAIN;
	} else if ((blk = carve(c))) {
		g = (size_t)(blk - base) / BOOT_GRAIN;
	}
	uintptr_t p = 0;
	if (blk) {
		p = ((uintptr_t)blk + align - 1) & ~(uintptr_t)(align - 1);
		size_t off = (p - (uintptr_t)blk) / BOOT_GRAIN;
		tab[g] = E_MAKE(E_START | E_LIVE, c, off, 0);
		if (off)
			tab[g + off] = E_MAKE(E_BACK, 0, g, 0);
	}
	unseal(false);
	mpk__boot_unlock();
	if (!blk) {
		errno = ENOMEM;
		return NULL;
	}
	return (void *)p;
}

/* The granule of the live block whose user pointer is p (the table
 * readable), or die: p starts no live block of ours. */
static size_t block_of(const void *p)
{
	const uint64_t *tab = mpk__boot_fixed.f.table;
	size_t at = (size_t)((const char *)p - mpk__boot_fixed.f.blocks);

	if (at % BOOT_GRAIN || at >= BOOT_RESERVE)
		mpk__malloc_die("free(): invalid pointer in the internal allocator");
	size_t g = at / BOOT_GRAIN;
	uint64_t e = tab[g];
	if (e & E_BACK) {
		size_t b = E_OFF(e);
		if (b < g && (tab[b] & E_START) && b + E_OFF(tab[b]) == g)
			g = b, e = tab[b];
		else
			e = 0;
	} else if (!(e & E_START) || E_OFF(e)) {
		e = 0;
	}
	if (!(e & E_START))
		mpk__malloc_die("free(): invalid pointer in the internal allocator");
	if (!(e & E_LIVE))
		mpk__malloc_die("free(): double free in the internal allocator");
	return g;
}

size_t mpk__boot_usable(const void *p)
{
	size_t g = block_of(p);
	uint64_t e = mpk__boot_fixed.f.table[g];

	return ((size_t)1 << (E_CLS(e) + BOOT_MIN_SHIFT)) - E_OFF(e) * BOOT_GRAIN;
}

void mpk__boot_free(void *p)
{
	if (mpk__boot_wipe)
		memset(p, 0, mpk__boot_usable(p));
	mpk__boot_lock();
	struct boot_state *st = mpk__boot_fixed.f.st;
	uint64_t *tab = mpk__boot_fixed.f.table;
	size_t g = block_of(p); /* again, under the lock: a racing free is named */
	unsigned c = E_CLS(tab[g]);
	size_t off = E_OFF(tab[g]);
	unseal(true);
	if (off)
		tab[g + off] = 0;
	tab[g] = E_MAKE(E_START, c, 0, st->free[c]);
	st->free[c] = g + 1;
	unseal(false);
	mpk__boot_unlock();
}

void *mpk__boot_realloc(void *p, size_t size)
{
	if (!p)
		return mpk__boot_alloc(size, 16);
	size_t have = mpk__boot_usable(p);
	if (size <= have && size >= have / 4)
		return p;
	void *q = mpk__boot_alloc(size, 16);
	if (!q)
		return NULL;
	memcpy(q, p, size < have ? size : have);
	mpk__boot_free(p);
	return q;
}
