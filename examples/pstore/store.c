/* SPDX-License-Identifier: MIT */
/*
 * The store.  A commit writes record n, then bumps n with one aligned
 * 8-byte store: a writer killed between the two leaves a torn record n
 * that the count does not cover, and the next commit overwrites it.  No
 * msync(): a SIGKILL loses nothing the page cache holds; a power loss is
 * another matter (msync() the record, then the count).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"

#define MAGIC 0x3130455254535350ull /* "PSSTRE01" */
#define HEAD_PAGE 4096

static uint32_t fnv(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint32_t h = 2166136261u;

	while (n--)
		h = (h ^ *b++) * 16777619u;
	return h;
}

static uint32_t rec_sum(const struct store_rec *r)
{
	return fnv(r, offsetof(struct store_rec, sum));
}

void store_expected(uint64_t seq, struct store_rec *r)
{
	memset(r, 0, sizeof(*r));
	r->seq = seq;
	r->len = 16 + (uint32_t)(seq % (STORE_DATA - 16 + 1));
	for (uint32_t i = 0; i < r->len; i++)
		r->data[i] = (uint8_t)(seq * 131 + i * 7 + 1);
	r->sum = rec_sum(r);
}

int store_open(struct store *s, const char *path, bool guard, bool read_only)
{
	struct stat st;

	memset(s, 0, sizeof(*s));
	s->fd = open(path, read_only ? O_RDONLY : O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (s->fd < 0 || fstat(s->fd, &st))
		return -1;
	if (st.st_size < STORE_SIZE && (read_only || ftruncate(s->fd, STORE_SIZE)))
		return -1;
	if (guard && !read_only) {
		/* Read-only for this thread, but for store_commit(). */
		s->d = mpk_domain_create("pstore", MPK_READ, 0);
		s->base = s->d ? mpk_map_file(s->d, s->fd, 0, STORE_SIZE) : NULL;
	} else {
		s->base = mmap(NULL, STORE_SIZE, read_only ? PROT_READ : PROT_READ | PROT_WRITE,
			       MAP_SHARED, s->fd, 0);
		if (s->base == MAP_FAILED)
			s->base = NULL;
	}
	if (!s->base)
		return -1;
	s->head = (struct store_head *)s->base;
	s->recs = (struct store_rec *)(s->base + HEAD_PAGE);
	s->cap = (STORE_SIZE - HEAD_PAGE) / sizeof(struct store_rec);
	if (s->head->magic != MAGIC && !read_only) {
		if (!s->d)
			s->head->magic = MAGIC; /* a new file */
		else
			MPK_WITH(s->d, MPK_RW) {
				s->head->magic = MAGIC;
			}
	}
	return 0;
}

void store_close(struct store *s)
{
	if (s->d)
		mpk_domain_destroy(s->d); /* unmaps the file */
	else if (s->base)
		munmap(s->base, STORE_SIZE);
	if (s->fd >= 0)
		close(s->fd);
}

static long commit(struct store *s, const void *data, uint32_t len)
{
	uint64_t n = s->head->n;

	if (n >= s->cap || len > STORE_DATA)
		return -1;
	struct store_rec *r = &s->recs[n];
	r->seq = n;
	r->len = len;
	memcpy(r->data, data, len);
	memset(r->data + len, 0, STORE_DATA - len);
	r->sum = rec_sum(r);
	__atomic_store_n(&s->head->n, n + 1, __ATOMIC_RELEASE); /* the commit */
	return (long)n;
}

long store_commit(struct store *s, const void *data, uint32_t len)
{
	long seq = -1;

	if (!s->d)
		return commit(s, data, len);
	/* The only writes to the file, for this thread, for this call. */
	MPK_WITH(s->d, MPK_RW) {
		seq = commit(s, data, len);
	}
	return seq;
}

static bool zero(const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

/* Count [p, p+n) as damaged unless it is all zero; remember the first. */
static void note(struct store_check *c, const unsigned char *base, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i]) {
			if (!c->stray++ && !c->bad)
				c->first = (size_t)(b + i - base);
			return;
		}
}

void store_check(const struct store *s, struct store_check *c)
{
	struct store_rec want;

	memset(c, 0, sizeof(*c));
	c->n = s->head->n;
	if (s->head->magic != MAGIC || c->n > s->cap) {
		c->stray = 1; /* the header itself */
		c->n = 0;
		return;
	}
	note(c, s->base, s->base + sizeof(*s->head), HEAD_PAGE - sizeof(*s->head));
	for (uint64_t i = 0; i < c->n; i++) {
		store_expected(i, &want);
		if (memcmp(&s->recs[i], &want, sizeof(want)) || rec_sum(&s->recs[i]) != want.sum)
			if (!c->bad++ && !c->stray)
				c->first = (size_t)((unsigned char *)&s->recs[i] - s->base);
	}
	if (c->n < s->cap) {
		/* Record n: empty, or torn by a kill in mid-commit: each byte
		 * is 0 or what it would have been (stores land in no
		 * particular order: memcpy() is not a byte loop). */
		const unsigned char *got = (const void *)&s->recs[c->n];
		const unsigned char *w = (const void *)&want;
		store_expected(c->n, &want);
		for (size_t j = 0; j < sizeof(want); j++)
			if (got[j] && got[j] != w[j] && !c->stray++)
				c->first = (size_t)(got + j - s->base);
		c->torn = !zero(got, sizeof(want));
	}
	for (uint64_t i = c->n + 1; i < s->cap; i++)
		note(c, s->base, &s->recs[i], sizeof(s->recs[i]));
	size_t used = HEAD_PAGE + s->cap * sizeof(struct store_rec);
	note(c, s->base, s->base + used, STORE_SIZE - used);
}
