/* SPDX-License-Identifier: MIT */
/*
 * SQLite's allocator, through SQLITE_CONFIG_MALLOC.  Why that and not only
 * the page cache (SQLITE_CONFIG_PCACHE2): a stray write that lands in a
 * prepared statement's program, the schema or a cursor corrupts a database
 * as surely as one in a page, and SQLITE_CONFIG_MALLOC puts all of them in
 * the domain, page cache included (pcache1 takes its pages from malloc).
 *
 * Each block has a 16-byte header, in the domain like the block, holding
 * its size and its index in a table of live blocks (plain memory), which
 * is what the wild-write test aims at.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include "guard.h"

struct hdr {
	size_t size, idx;
};

struct live {
	struct hdr *h;
};

mpk_domain *guard_domain;
static mpk_heap *heap;
static struct live *table;
static size_t n_live, cap_live;

static void *raw_alloc(size_t n)
{
	return heap ? mpk_heap_malloc(heap, n) : malloc(n);
}

static void *raw_realloc(void *p, size_t n)
{
	return heap ? mpk_heap_realloc(heap, p, n) : realloc(p, n);
}

static void raw_free(void *p)
{
	heap ? (void)mpk_heap_free(heap, p) : free(p);
}

static int table_add(struct hdr *h)
{
	if (n_live == cap_live) {
		size_t cap = cap_live ? 2 * cap_live : 4096;
		struct live *t = realloc(table, cap * sizeof(*t));
		if (!t)
			return -1;
		table = t, cap_live = cap;
	}
	h->idx = n_live;
	table[n_live++].h = h;
	return 0;
}

static void table_del(struct hdr *h)
{
	struct hdr *last = table[--n_live].h;

	table[h->idx].h = last;
	last->idx = h->idx;
}

static void *x_malloc(int n)
{
	struct hdr *h = raw_alloc(sizeof(*h) + (size_t)n);

	if (!h)
		return NULL;
	h->size = (size_t)n;
	if (table_add(h)) {
		raw_free(h);
		return NULL;
	}
	return h + 1;
}

static void x_free(void *p)
{
	struct hdr *h = (struct hdr *)p - 1;

	table_del(h);
	raw_free(h);
}

static void *x_realloc(void *p, int n)
{
	struct hdr *h = (struct hdr *)p - 1, *nh;

	table_del(h);
	if (!(nh = raw_realloc(h, sizeof(*h) + (size_t)n))) {
		table_add(h); /* the old block lives on; there was room */
		return NULL;
	}
	nh->size = (size_t)n;
	table_add(nh); /* cannot fail: one was just removed */
	return nh + 1;
}

static int x_size(void *p)
{
	return (int)((struct hdr *)p - 1)->size;
}

static int x_roundup(int n)
{
	return (n + 15) & ~15;
}

static int x_init(void *arg)
{
	(void)arg;
	return SQLITE_OK;
}

static void x_shutdown(void *arg)
{
	(void)arg;
}

int guard_setup(enum guard_mode mode)
{
	static const sqlite3_mem_methods methods = {
		x_malloc, x_free, x_realloc, x_size, x_roundup, x_init, x_shutdown, NULL
	};

	/* One thread: SQLite's mutexes would only add cost to both sides. */
	if (sqlite3_config(SQLITE_CONFIG_SINGLETHREAD) != SQLITE_OK)
		return -1;
	if (mode == GUARD_NONE)
		return 0;
	if (mode == GUARD_ON) {
		/* Read-only for this thread from the start: SQLite hands out
		 * pointers into its memory (sqlite3_column_text()), which the
		 * application reads after the call. */
		if (!(guard_domain = mpk_domain_create("sqlite", MPK_READ, 0)) ||
		    !(heap = mpk_heap_create(guard_domain, 0))) {
			perror("sqlite-guard: mpkit");
			return -1;
		}
	}
	if (sqlite3_config(SQLITE_CONFIG_MALLOC, &methods) != SQLITE_OK) {
		fprintf(stderr, "sqlite-guard: SQLITE_CONFIG_MALLOC refused\n");
		return -1;
	}
	return 0;
}

void *guard_random_block(unsigned *seed, size_t *len)
{
	if (!n_live)
		return NULL;
	struct hdr *h = table[(size_t)rand_r(seed) % n_live].h;
	*len = h->size; /* a read: the domain is readable */
	return h + 1;
}

void guard_census(size_t *blocks, size_t *bytes)
{
	*blocks = n_live;
	*bytes = 0;
	for (size_t i = 0; i < n_live; i++)
		*bytes += table[i].h->size;
}
