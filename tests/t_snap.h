/* SPDX-License-Identifier: MIT */
/*
 * The process as a failed call must leave it (include/mpkit.h: "a failed
 * call leaves every state as it was"): a snapshot of everything an mpkit
 * call can change that a program can see, and a comparison that names
 * each difference.  What it holds: mpk_info() (domains, keys held, keys
 * the kernel has free, budget, the caller's PKRU), mpk_stats_get(), the
 * lockdown flags, every signal's disposition read back with sigaction(),
 * the open descriptors, the threads, no_new_privs, the seccomp mode and
 * filter count, dumpability, and every mapping with its protection and
 * protection key (smaps).  Taking one allocates nothing (raw reads into a
 * static buffer), so that the snapshot does not move what it measures.
 * Left out, as libc's or the kernel's and not the process's state: the
 * main stack and brk heap growing, libc's unwinder once loaded, a
 * sanitizer's allocator, how the kernel splits alike neighbours into
 * mappings, SA_RESTORER and the mask of SIG_DFL/SIG_IGN, and which of
 * AD or AD|WD closes a key (both mean no access).  Public API, libc and
 * /proc only.
 */
#ifndef MPK_TEST_SNAP_H
#define MPK_TEST_SNAP_H

#include "t.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/prctl.h>

#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000
#endif

#define T_SNAP_MAPS 8192

struct t_vma {
	unsigned long lo, hi;
	char perms[5];
	int pkey; /* -1 where smaps shows none (no PKU) */
	bool dd;  /* left out of core dumps (VmFlags dd): vault memory is */
	char name[80];
};

struct t_snap {
	struct mpk_info info;
	int info_rc;
	struct mpk_stats stats;
	int lockdown;
	struct sigaction sa[65];
	bool sa_ok[65];
	int fds, threads;
	int nnp, seccomp, filters; /* -1: not shown by this kernel */
	int dumpable;
	int nvma;
	struct t_vma vma[T_SNAP_MAPS];
};

/* What may differ after a call that failed: */
enum {
	/* It made system calls (undone) before it failed: the counters of
	 * work done (mprotect calls, broadcasts) may have moved. */
	T_SNAP_WORK = 1u << 0,
};

/* The whole of a /proc file into a static buffer; its length, or -1. */
long t_snap_read(const char *path, char *buf, size_t size);

/* Entries of a /proc directory, "." and ".." aside (getdents64: no
 * allocation).  The descriptor that reads /proc/self/fd counts itself,
 * in every snapshot alike. */
int t_snap_entries(const char *path);

/* The number after "key:" in a /proc status text, -1 if absent. */
int t_snap_field(const char *text, const char *key);

/* Wait (up to 2 s) until the process has n threads: one just joined may
 * linger in /proc for a moment, and would count in a snapshot. */
void t_snap_settle(int n);

/* Wait (up to 2 s) until thread tid, joined, is gone from /proc. */
void t_snap_gone(pid_t tid);

/* The mappings, from smaps: each header line, and its ProtectionKey. */
void t_snap_maps(struct t_snap *s);

void t_snap_take(struct t_snap *s);

/* Mappings that change by themselves, or are libc's: the main stack and
 * the brk heap grow (libc's allocator is not mpkit's state), and libc
 * loads its unwinder (libgcc_s) on the first backtrace(), once. */
bool t_snap_vma_moves(const struct t_vma *v);

void t_snap_vma_print(const char *how, const struct t_vma *v);

bool t_snap_vma_same(const struct t_vma *a, const struct t_vma *b);

/* The mappings of a and b, the movers aside: each one that differs. */
int t_snap_maps_diff(const struct t_snap *a, const struct t_snap *b);

#define T_SNAP_INT(what, field)                                                   \
	do {                                                                      \
		if ((long long)a->field != (long long)b->field)                   \
			t_fail("%s: %s was %lld, is %lld", what, #field,          \
			       (long long)a->field, (long long)b->field);         \
	} while (0)

/*
 * Check that snapshot b (after a call failed) shows the process as a
 * (before it) did, but for what flags allow; every difference is a
 * failure naming what (the case).
 */
void t_snap_check(const struct t_snap *a, const struct t_snap *b, unsigned flags,
				const char *what);

/* A snapshot to compare against, and the check after a call: static
 * storage (a snapshot is large). */
extern struct t_snap t_snap_before, t_snap_after;

void t_snap_begin(void);

void t_snap_end(unsigned flags, const char *what);

/* expr fails with E, and the process is as it was (a table's row). */
#define FAILS_CLEANLY(E, expr)                                                \
	do {                                                                  \
		t_snap_begin();                                               \
		CHECK_ERR(expr, E);                                           \
		t_snap_end(0, #expr);                                         \
	} while (0)

#endif
