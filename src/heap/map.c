/* SPDX-License-Identifier: MIT */
/*
 * Address -> chunk.  A three-level radix tree over 1 MiB granules of the
 * 48-bit address space, in the metadata area (each leaf entry has two
 * slots, for chunks that would straddle granules; aligned ones take one),
 * its root in the area's state, and the table of granule tags readable by
 * all (heap.h), read-only while the area is sealed (seal.c).  Writers hold
 * the meta lock; lookups take no lock (free() of one heap does not wait for
 * another heap growing).  Nodes live until the area is torn down.
 */
#define _GNU_SOURCE
#include <errno.h>

#include <sys/mman.h>

#include "heap.h"

#define VA_BITS 48
#define L1_BITS 10
#define L2_BITS 9
#define L3_BITS 9 /* L1 + L2 + L3 = VA_BITS - CHUNK_SHIFT */

struct leaf {
	struct chunk *c[2];
};

/* The root: [1 << L1_BITS] -> [1 << L2_BITS] -> struct leaf[1 << L3_BITS]. */
static void ***root_at(void)
{
	return &mpk__meta_st()->map_root;
}

/* Tag granule g with uid (0: none); 0 or -1 with ENOMEM.  Sealed, the
 * root and the leaf are read-only but for this store. */
static int tag(uintptr_t g, uint32_t uid)
{
	uint32_t **top = &mpk__tag_root[g >> TAG_L2];
	uint32_t *leaf = __atomic_load_n(top, __ATOMIC_ACQUIRE);
	size_t llen = sizeof(*leaf) << TAG_L2;

	if (!leaf) {
		if (!uid)
			return 0;
		if (!(leaf = mpk_os_map(llen, PROT_READ | PROT_WRITE))) {
			errno = ENOMEM;
			return -1;
		}
		if (mpk__seal_write(top, sizeof(*top), true)) {
			mpk_os_unmap(leaf, llen);
			return -1;
		}
		__atomic_store_n(top, leaf, __ATOMIC_RELEASE);
		(void)!mpk__seal_write(top, sizeof(*top), false);
		/* Born writable: sealed now too, opened for its store below. */
		(void)!mpk__seal_write(leaf, llen, false);
	}
	uint32_t *e = &leaf[g & ((1u << TAG_L2) - 1)];
	if (mpk__seal_write(e, sizeof(*e), true))
		return -1;
	__atomic_store_n(e, uid, __ATOMIC_RELEASE);
	(void)!mpk__seal_write(e, sizeof(*e), false);
	return 0;
}

/* The map's nodes lived in the area's state, which went with the area. */
void mpk__map_reset(void)
{
}

/* The leaf entry for granule g, made if need be (NULL: ENOMEM). */
static struct leaf *entry(uintptr_t g, bool make)
{
	unsigned i1 = (unsigned)(g >> (L2_BITS + L3_BITS));
	unsigned i2 = (unsigned)(g >> L3_BITS) & ((1u << L2_BITS) - 1);
	unsigned i3 = (unsigned)g & ((1u << L3_BITS) - 1);
	void ***rootp = root_at();
	void **top = __atomic_load_n(rootp, __ATOMIC_ACQUIRE);

	if (!top) {
		if (!make || !(top = mpk__meta_alloc(sizeof(void *) << L1_BITS)))
			return NULL;
		__atomic_store_n(rootp, top, __ATOMIC_RELEASE);
	}
	void **mid = __atomic_load_n((void ***)&top[i1], __ATOMIC_ACQUIRE);
	if (!mid) {
		if (!make || !(mid = mpk__meta_alloc(sizeof(void *) << L2_BITS)))
			return NULL;
		__atomic_store_n((void ***)&top[i1], mid, __ATOMIC_RELEASE);
	}
	struct leaf *leaf = __atomic_load_n((struct leaf **)&mid[i2], __ATOMIC_ACQUIRE);
	if (!leaf) {
		if (!make || !(leaf = mpk__meta_alloc(sizeof(struct leaf) << L3_BITS)))
			return NULL;
		__atomic_store_n((struct leaf **)&mid[i2], leaf, __ATOMIC_RELEASE);
	}
	return &leaf[i3];
}

static void put(uintptr_t g, struct chunk *c)
{
	struct leaf *e = entry(g, false);

	for (int i = 0; i < 2; i++)
		if (__atomic_load_n(&e->c[i], __ATOMIC_RELAXED) == c) {
			__atomic_store_n(&e->c[i], NULL, __ATOMIC_RELEASE);
			return;
		}
}

int mpk__map_add(struct chunk *c)
{
	uintptr_t g0 = c->base >> CHUNK_SHIFT;
	uintptr_t g1 = (c->base + CHUNK_SIZE - 1) >> CHUNK_SHIFT;

	if (g1 >> (VA_BITS - CHUNK_SHIFT)) {
		errno = ENOMEM; /* above 48 bits: the kernel was asked for it */
		return -1;
	}
	if (tag(g0, c->heap->uid) || (g1 != g0 && tag(g1, c->heap->uid)))
		return -1;
	for (uintptr_t g = g0; g <= g1; g++) {
		struct leaf *e = entry(g, true);
		int i = 0;
		while (e && i < 2 && __atomic_load_n(&e->c[i], __ATOMIC_RELAXED))
			i++;
		if (!e || i == 2) {
			/* No room cannot happen for disjoint chunks; be safe. */
			if (g != g0)
				put(g0, c);
			tag(g0, 0);
			tag(g1, 0);
			errno = ENOMEM;
			return -1;
		}
		__atomic_store_n(&e->c[i], c, __ATOMIC_RELEASE);
	}
	return 0;
}

void mpk__map_del(struct chunk *c)
{
	uintptr_t g0 = c->base >> CHUNK_SHIFT;
	uintptr_t g1 = (c->base + CHUNK_SIZE - 1) >> CHUNK_SHIFT;

	for (uintptr_t g = g0; g <= g1; g++) {
		tag(g, 0);
		put(g, c);
	}
	/* The caches' chunk hints may name it: they start afresh. */
	mpk__heap_epoch_bump();
}

struct chunk *mpk__map_find(uintptr_t a)
{
	if (a >> VA_BITS)
		return NULL;
	struct leaf *e = entry(a >> CHUNK_SHIFT, false);
	if (!e)
		return NULL;
	for (int i = 0; i < 2; i++) {
		struct chunk *c = __atomic_load_n(&e->c[i], __ATOMIC_ACQUIRE);
		if (c && a - c->base < CHUNK_SIZE)
			return c;
	}
	return NULL;
}
