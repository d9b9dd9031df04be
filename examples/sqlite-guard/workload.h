/* SPDX-License-Identifier: MIT */
/* The workload: inserts, updates, deletes and lookups on an in-memory
 * table, checked against a shadow copy the application keeps. */
#ifndef SQLITE_GUARD_WORKLOAD_H
#define SQLITE_GUARD_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>

struct workload {
	long ops;      /* SQL statements to run */
	long wild;     /* wild writes to fire among them (0: none) */
	unsigned seed;
	/* results */
	long fired, faulted;  /* wild writes made, and caught */
	bool integrity_ok;    /* PRAGMA integrity_check said "ok" */
	char integrity[128];  /* what it said, first line */
	long rows, differ;    /* rows in the shadow copy; rows that differ */
	size_t blocks, bytes; /* SQLite's live memory after the statements */
	double seconds;       /* the statements' time, checks excluded */
};

/* Run w (guard_setup() first).  0, or -1 when SQLite failed at once. */
int workload_run(struct workload *w);

#endif
