/* SPDX-License-Identifier: MIT */
/*
 * A persistent store of fixed-size records in a file mapped MAP_SHARED
 * into domain "pstore" (mpk_map_file()), read-only for the application
 * and writable only inside store_commit().
 */
#ifndef PSTORE_STORE_H
#define PSTORE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mpkit.h"

#define STORE_SIZE (4u << 20)
#define STORE_DATA 48

struct store_rec {
	uint64_t seq;  /* its index */
	uint32_t len;  /* bytes of data used */
	uint8_t data[STORE_DATA];
	uint32_t sum;  /* FNV-1a of the above */
};

struct store_head {
	uint64_t magic;
	uint64_t n; /* committed records: one aligned store is the commit */
};

struct store {
	int fd;
	mpk_domain *d; /* NULL: not guarded */
	unsigned char *base;
	struct store_head *head;
	struct store_rec *recs;
	size_t cap;
};

/* Open (creating) path; guard: in a domain, else a plain mapping.
 * read_only: a plain read-only mapping, for checking.  0 or -1. */
int store_open(struct store *s, const char *path, bool guard, bool read_only);
void store_close(struct store *s);

/* Append a record; its seq, or -1 when the store is full. */
long store_commit(struct store *s, const void *data, uint32_t len);

/* The record a given seq must hold (the crash test's data). */
void store_expected(uint64_t seq, struct store_rec *r);

struct store_check {
	uint64_t n;          /* committed records */
	uint64_t bad;        /* committed records that fail their checksum or data */
	uint64_t stray;      /* bytes outside records that are not what they must be */
	bool torn;           /* record n was being written when the writer died */
	size_t first;        /* file offset of the first damage, if any */
};

/* Check every byte of the file. */
void store_check(const struct store *s, struct store_check *c);

#endif
