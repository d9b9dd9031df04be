/* SPDX-License-Identifier: MIT */
/*
 * mpkit's own allocator for its tables (domains, region chunks, free
 * lists, thread lists...).  mpkit may itself be the process's malloc (its
 * heap behind an LD_PRELOAD), and it calls for table memory while holding
 * its locks: a malloc() there would re-enter the heap and wait on a lock
 * its own thread holds.  So no table comes from malloc: blocks come from
 * pages mapped here, power-of-two classes with a free list each, and big
 * ones a mapping of their own.  Its lock is a leaf: nothing is called
 * under it but mmap(), and fork.c takes it last.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"
#include "os.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/lsan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
/* LeakSanitizer looks for pointers to the program's blocks in mpkit's
 * tables too (a fault callback's argument...). */
#define ROOT(p, n) __lsan_register_root_region(p, n)
#define UNROOT(p, n) __lsan_unregister_root_region(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#define ROOT(p, n) ((void)(p), (void)(n))
#define UNROOT(p, n) ((void)(p), (void)(n))
#endif

#define MIN_SHIFT 4
#define CLASSES 12                   /* 16 B .. 32 KiB */
#define SLAB ((size_t)256 << 10)     /* pages mapped at a time for the classes */
#define HDR 16                       /* keeps blocks 16-byte aligned */
#define MAGIC 0x69616c6cu            /* "iall" */

/* In front of every block: its class, or CLASSES for a mapping of its
 * own, whose length is then in len. */
struct hdr {
	uint32_t magic, cls;
	size_t len;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct hdr *freel[CLASSES]; /* the block's first word links them */
static uintptr_t bump, bump_end;

static size_t class_size(unsigned c)
{
	return (size_t)1 << (c + MIN_SHIFT);
}

/* The class holding n bytes, CLASSES if none does. */
static unsigned class_of(size_t n)
{
	unsigned c = 0;
	while (c < CLASSES && class_size(c) < n)
		c++;
	return c;
}

static void *big_alloc(size_t n)
{
	size_t page = mpk_os_page_size();

	if (n > SIZE_MAX / 2) {
		errno = ENOMEM;
		return NULL;
	}
	size_t len = (n + HDR + page - 1) & ~(page - 1);
	struct hdr *h = mpk_os_map(len, PROT_READ | PROT_WRITE);
	if (!h) {
		errno = ENOMEM;
		return NULL;
	}
	*h = (struct hdr){ MAGIC, CLASSES, len };
	ROOT(h, len);
	return (char *)h + HDR;
}

static struct hdr *carve(unsigned c)
{
	size_t size = HDR + class_size(c);

	if (bump_end - bump < size) {
		/* The old tail is too small for this class: left unused. */
		void *p = mpk_os_map(SLAB, PROT_READ | PROT_WRITE);
		if (!p)
			return NULL;
		ROOT(p, SLAB);
		bump = (uintptr_t)p;
		bump_end = bump + SLAB;
	}
	struct hdr *h = (struct hdr *)bump;
	bump += size;
	return h;
}

void *mpk__ialloc(size_t n)
{
	unsigned c = class_of(n ? n : 1);

	if (c == CLASSES)
		return big_alloc(n);
	pthread_mutex_lock(&lock);
	struct hdr *h = freel[c];
	if (h) {
		memcpy(&freel[c], (const void *)(h + 1), sizeof(freel[c])); /* the link (never poisoned) */
	} else if (!(h = carve(c))) {
		pthread_mutex_unlock(&lock);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_unlock(&lock);
	*h = (struct hdr){ MAGIC, c, 0 };
	UNPOISON(h + 1, class_size(c));
	memset(h + 1, 0, class_size(c));
	return h + 1;
}

void *mpk__ialloc_array(size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size) {
		errno = ENOMEM;
		return NULL;
	}
	return mpk__ialloc(n * size);
}

static struct hdr *hdr_of(void *p)
{
	struct hdr *h = (struct hdr *)((char *)p - HDR);
	if (h->magic != MAGIC || h->cls > CLASSES)
		__builtin_trap(); /* not ours: mpkit's own bug */
	return h;
}

static size_t capacity(const struct hdr *h)
{
	return h->cls == CLASSES ? h->len - HDR : class_size(h->cls);
}

void mpk__ifree(void *p)
{
	if (!p)
		return;
	int saved = errno;
	struct hdr *h = hdr_of(p);
	unsigned c = h->cls;

	if (c == CLASSES) {
		UNROOT(h, h->len);
		mpk_os_unmap(h, h->len);
		errno = saved;
		return;
	}
	POISON((char *)p + sizeof(void *), class_size(c) - sizeof(void *));
	pthread_mutex_lock(&lock);
	memcpy(p, &freel[c], sizeof(h));
	freel[c] = h;
	pthread_mutex_unlock(&lock);
}

void *mpk__irealloc(void *p, size_t n)
{
	if (!p)
		return mpk__ialloc(n);
	struct hdr *h = hdr_of(p);
	size_t cap = capacity(h);
	if (n <= cap && (h->cls == CLASSES || h->cls == class_of(n ? n : 1)))
		return p;
	void *q = mpk__ialloc(n);
	if (!q)
		return NULL; /* p stays as it was */
	memcpy(q, p, n < cap ? n : cap);
	mpk__ifree(p);
	return q;
}

void mpk__ialloc_lock(void)
{
	pthread_mutex_lock(&lock);
}

void mpk__ialloc_unlock(void)
{
	pthread_mutex_unlock(&lock);
}

/* Unlocked, not made anew: the child's one thread is the one that took it
 * in prepare, and ThreadSanitizer takes a lock made anew as held for good
 * (a false lock-order cycle with every lock taken after it). */
void mpk__ialloc_child(void)
{
	pthread_mutex_unlock(&lock);
}
