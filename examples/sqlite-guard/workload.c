/* SPDX-License-Identifier: MIT */
/*
 * The application: a table of (id, k, v) and a shadow copy of it in its
 * own memory.  The bug it has on purpose: wild writes, one random byte at
 * a random address inside a live block of SQLite's, fired between SQLite
 * calls.  They come from this thread, between calls, so that they are the
 * application's own stray writes on both backends (on soft, rights are
 * process-wide: another thread's write while this one is inside SQLite
 * would go through).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "guard.h"
#include "workload.h"

#define VLEN 24

struct row {
	long long k;
	char v[VLEN + 1];
	bool live;
};

static sigjmp_buf wild_jmp;
static volatile long wild_faults;

/* A wild write into SQLite's memory faults: count it, skip the write. */
static int on_fault(const struct mpk_fault *f, void *arg)
{
	static bool shown;
	char buf[512];

	(void)arg;
	if (f->domain != guard_domain || !f->write)
		return MPK_FAULT_ABORT;
	if (!shown) { /* the first report, as a sample */
		shown = true;
		size_t n = mpk_fault_format(f, buf, sizeof(buf));
		(void)!write(2, buf, n < sizeof(buf) ? n : sizeof(buf) - 1);
	}
	wild_faults++;
	siglongjmp(wild_jmp, 1);
}

static void wild_write(struct workload *w)
{
	size_t len;
	unsigned char *p = guard_random_block(&w->seed, &len);

	if (!p || !len)
		return;
	volatile unsigned char *at = p + (size_t)rand_r(&w->seed) % len;
	unsigned char val = (unsigned char)rand_r(&w->seed);
	w->fired++;
	if (sigsetjmp(wild_jmp, 1) == 0)
		*at ^= val | 1; /* never a no-op */
}

static void random_v(char *v, unsigned *seed)
{
	for (int i = 0; i < VLEN; i++)
		v[i] = (char)('a' + rand_r(seed) % 26);
	v[VLEN] = 0;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static int check_cb(void *arg, int n, char **val, char **col)
{
	struct workload *w = arg;

	(void)n, (void)col;
	if (!w->integrity[0])
		snprintf(w->integrity, sizeof(w->integrity), "%s", val[0] ? val[0] : "(null)");
	return 0;
}

/* integrity_check, then every row against the shadow copy. */
static void verify(sqlite3 *db, struct workload *w, struct row *shadow, long n_ids)
{
	sqlite3_stmt *all;
	long id = 0;

	w->integrity[0] = 0;
	if (SQ(sqlite3_exec(db, "PRAGMA integrity_check", check_cb, w, NULL)) != SQLITE_OK &&
	    !w->integrity[0])
		snprintf(w->integrity, sizeof(w->integrity), "error: %s", SQ(sqlite3_errmsg(db)));
	w->integrity_ok = !strcmp(w->integrity, "ok");
	for (long i = 0; i < n_ids; i++)
		w->rows += shadow[i].live;
	if (SQ(sqlite3_prepare_v2(db, "SELECT id, k, v FROM t ORDER BY id", -1, &all, NULL))) {
		w->differ = w->rows;
		return;
	}
	int rc;
	while ((rc = SQ(sqlite3_step(all))) == SQLITE_ROW) {
		long got = (long)SQ(sqlite3_column_int64(all, 0));
		for (; id < n_ids && id < got; id++)
			w->differ += shadow[id].live; /* a row SQLite lost */
		const char *v = (const char *)SQ(sqlite3_column_text(all, 2));
		if (got < 0 || got >= n_ids || !shadow[got].live ||
		    SQ(sqlite3_column_int64(all, 1)) != shadow[got].k || !v ||
		    strcmp(v, shadow[got].v))
			w->differ++;
		id = got + 1;
	}
	for (; id < n_ids; id++)
		w->differ += shadow[id].live;
	if (rc != SQLITE_DONE)
		w->differ++; /* the scan broke off */
	SQ(sqlite3_finalize(all));
}

int workload_run(struct workload *w)
{
	sqlite3 *db;
	sqlite3_stmt *ins, *upd, *del, *sel;
	struct row *shadow = calloc((size_t)w->ops + 1, sizeof(*shadow));
	long n_ids = 0, every = w->wild ? w->ops / w->wild : 0;

	if (!shadow || mpk_fault_handler_install(on_fault, NULL))
		return -1;
	if (SQ(sqlite3_open(":memory:", &db)) ||
	    SQ(sqlite3_exec(db, "CREATE TABLE t (id INTEGER PRIMARY KEY, k INTEGER, v TEXT);"
				"CREATE INDEX t_k ON t (k);", NULL, NULL, NULL)) ||
	    SQ(sqlite3_prepare_v2(db, "INSERT INTO t VALUES (?, ?, ?)", -1, &ins, NULL)) ||
	    SQ(sqlite3_prepare_v2(db, "UPDATE t SET k = ?, v = ? WHERE id = ?", -1, &upd, NULL)) ||
	    SQ(sqlite3_prepare_v2(db, "DELETE FROM t WHERE id = ?", -1, &del, NULL)) ||
	    SQ(sqlite3_prepare_v2(db, "SELECT k, v FROM t WHERE id = ?", -1, &sel, NULL))) {
		fprintf(stderr, "sqlite-guard: %s\n", sqlite3_errmsg(db));
		return -1;
	}
	double t0 = now();
	for (long i = 0; i < w->ops; i++) {
		long id = n_ids ? (long)((unsigned long)rand_r(&w->seed) % (unsigned long)n_ids) : 0;
		int op = n_ids < 100 ? 0 : rand_r(&w->seed) % 10;
		struct row *r;
		if (op <= 4) { /* insert */
			r = &shadow[id = n_ids++];
			r->k = rand_r(&w->seed) % 1000;
			random_v(r->v, &w->seed);
			r->live = true;
			SQ(sqlite3_bind_int64(ins, 1, id));
			SQ(sqlite3_bind_int64(ins, 2, r->k));
			SQ(sqlite3_bind_text(ins, 3, r->v, VLEN, SQLITE_STATIC));
			SQ(sqlite3_step(ins));
			SQ(sqlite3_reset(ins));
		} else if (op <= 6) { /* update */
			r = &shadow[id];
			long long k = rand_r(&w->seed) % 1000;
			char v[VLEN + 1];
			random_v(v, &w->seed);
			SQ(sqlite3_bind_int64(upd, 1, k));
			SQ(sqlite3_bind_text(upd, 2, v, VLEN, SQLITE_TRANSIENT));
			SQ(sqlite3_bind_int64(upd, 3, id));
			SQ(sqlite3_step(upd));
			SQ(sqlite3_reset(upd));
			if (r->live) {
				r->k = k;
				memcpy(r->v, v, sizeof(v));
			}
		} else if (op == 7) { /* delete */
			SQ(sqlite3_bind_int64(del, 1, id));
			SQ(sqlite3_step(del));
			SQ(sqlite3_reset(del));
			shadow[id].live = false;
		} else { /* lookup: a read of SQLite's memory, outside the call */
			SQ(sqlite3_bind_int64(sel, 1, id));
			if (SQ(sqlite3_step(sel)) == SQLITE_ROW) {
				const unsigned char *v = SQ(sqlite3_column_text(sel, 1));
				(void)*(volatile const unsigned char *)v;
			}
			SQ(sqlite3_reset(sel));
		}
		if (every && i % every == every / 2)
			wild_write(w);
	}
	w->seconds = now() - t0;
	w->faulted = wild_faults;
	guard_census(&w->blocks, &w->bytes);
	SQ(sqlite3_finalize(ins));
	SQ(sqlite3_finalize(upd));
	SQ(sqlite3_finalize(del));
	SQ(sqlite3_finalize(sel));
	verify(db, w, shadow, n_ids);
	SQ(sqlite3_close(db));
	free(shadow);
	return 0;
}
