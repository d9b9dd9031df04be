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
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "malloc.h"

#define BOOT_RESERVE ((size_t)1 << 32) /* address space only: PROT_NONE until used */
#define BOOT_COMMIT ((size_t)1 << 20)
#define BOOT_MIN_SHIFT 5
#define BOOT_CLASSES 32                /* 32 B .. 2^36 B: bounded by the reserve */
#define BOOT_MAGIC 0x6d6b6275u         /* "mkbu" */

/* Before each user pointer: its block's class and the user pointer's
 * distance from the block's first usable byte (aligned blocks). */
struct boot_hdr {
	uint32_t magic;
	uint32_t cls;
	uint64_t off;
};

static char *base;              /* the reserve; set once, never unmapped */
static size_t used, committed;  /* bump pointer, RW prefix (under lock) */
static void *free_list[BOOT_CLASSES];
static volatile int lock;
bool mpk__boot_wipe;

/* A spin lock, not a mutex: it works before libc is ready and after fork
 * needs nothing but a reset (atfork handlers, malloc.c). */
void mpk__boot_lock(void)
{
	while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&lock, __ATOMIC_RELAXED))
			sched_yield();
}

void mpk__boot_unlock(void)
{
	__atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
}

bool mpk__boot_owns(const void *p)
{
	const char *b = __atomic_load_n(&base, __ATOMIC_ACQUIRE);

	return b && (const char *)p >= b && (const char *)p < b + BOOT_RESERVE;
}

/* A fresh block of class c (lock held), or NULL. */
static void *carve(unsigned c)
{
	size_t len = (size_t)1 << (c + BOOT_MIN_SHIFT);

	if (!base) {
		void *m = mmap(NULL, BOOT_RESERVE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			       -1, 0);
		if (m == MAP_FAILED)
			return NULL;
		__atomic_store_n(&base, (char *)m, __ATOMIC_RELEASE);
	}
	/* Blocks are aligned to their size (up to a page): aligned requests
	 * waste less. */
	size_t at = (used + (len < 4096 ? len : 4096) - 1) & ~((len < 4096 ? len : 4096) - 1);
	if (at > BOOT_RESERVE || len > BOOT_RESERVE - at)
		return NULL;
	if (at + len > committed) {
		size_t want = (at + len - committed + BOOT_COMMIT - 1) & ~(BOOT_COMMIT - 1);
		if (want > BOOT_RESERVE - committed)
			want = BOOT_RESERVE - committed;
		if (mprotect(base + committed, want, PROT_READ | PROT_WRITE))
			return NULL;
		committed += want;
	}
	used = at + len;
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
	size_t need = sizeof(struct boot_hdr) + size + (align > 16 ? align : 0);
	unsigned c = 0;
	while (((size_t)1 << (c + BOOT_MIN_SHIFT)) < need)
		c++;
	if (c >= BOOT_CLASSES) {
		errno = ENOMEM;
		return NULL;
	}
	mpk__boot_lock();
	char *blk = free_list[c];
	if (blk)
		free_list[c] = *(void **)blk;
	else
		blk = carve(c);
	mpk__boot_unlock();
	if (!blk) {
		errno = ENOMEM;
		return NULL;
	}
	uintptr_t first = (uintptr_t)blk + sizeof(struct boot_hdr);
	uintptr_t p = (first + align - 1) & ~(uintptr_t)(align - 1);
	struct boot_hdr *h = (struct boot_hdr *)p - 1;
	h->magic = BOOT_MAGIC;
	h->cls = c;
	h->off = p - first;
	return (void *)p;
}

static struct boot_hdr *hdr_of(const void *p)
{
	struct boot_hdr *h = (struct boot_hdr *)p - 1;

	if (((uintptr_t)p & 15) || h->magic != BOOT_MAGIC || h->cls >= BOOT_CLASSES)
		mpk__malloc_die("free(): invalid pointer in the internal allocator");
	return h;
}

size_t mpk__boot_usable(const void *p)
{
	const struct boot_hdr *h = hdr_of(p);

	return ((size_t)1 << (h->cls + BOOT_MIN_SHIFT)) - sizeof(struct boot_hdr) - h->off;
}

void mpk__boot_free(void *p)
{
	struct boot_hdr *h = hdr_of(p);
	unsigned c = h->cls;
	char *blk = (char *)p - h->off - sizeof(struct boot_hdr);

	if (mpk__boot_wipe)
		memset(p, 0, mpk__boot_usable(p));
	h->magic = 0; /* a second free is caught */
	mpk__boot_lock();
	*(void **)blk = free_list[c];
	free_list[c] = blk;
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
