/* SPDX-License-Identifier: MIT */
/*
 * SQLite whose memory only SQLite may write: every allocation SQLite makes
 * (SQLITE_CONFIG_MALLOC) comes from an mpk_heap in domain "sqlite", which
 * the application's thread holds read-only, and read-write only for the
 * length of an sqlite3_* call made through SQ().
 */
#ifndef SQLITE_GUARD_H
#define SQLITE_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <sqlite3.h>

#include "mpkit.h"

enum guard_mode {
	GUARD_NONE,    /* SQLite's own allocator, no tracking */
	GUARD_TRACKED, /* malloc(), with every live block listed (wild-write targets) */
	GUARD_ON,      /* an mpk_heap in domain "sqlite", listed too */
};

/* Configure SQLite's allocator; call before any other sqlite3_* call.
 * 0, or -1 with a message on stderr. */
int guard_setup(enum guard_mode mode);

/* The domain (GUARD_ON), else NULL. */
extern mpk_domain *guard_domain;

/* Make an sqlite3_* call with SQLite's memory writable, for this thread:
 *	rc = SQ(sqlite3_step(stmt));
 * If closing it again fails, it would stay writable: stop. */
#define SQ(call)                                                            \
	({                                                                  \
		mpk_scope sq_s_ = guard_domain ? mpk_enter(guard_domain, MPK_RW) \
					       : (mpk_scope){ NULL, -1 };   \
		__typeof__(call) sq_r_ = (call);                            \
		if (mpk_leave(&sq_s_))                                      \
			abort();                                            \
		sq_r_;                                                      \
	})

/* A live block of SQLite's, chosen at random (tracked modes), its user
 * bytes in *len; NULL when there is none. */
void *guard_random_block(unsigned *seed, size_t *len);

/* Live blocks and their bytes (tracked modes). */
void guard_census(size_t *blocks, size_t *bytes);

#endif
