/* SPDX-License-Identifier: MIT */
/*
 * Helpers for tests that check state: that rights really hold (by touching
 * the memory in a child), what /proc/self/maps says, and the counters a
 * failed call must leave alone.  Public API and libc only, like the tests.
 */
#ifndef MPK_TEST_STATE_H
#define MPK_TEST_STATE_H

#include "t.h"

size_t t_page(void);

/* Live domains according to mpk_info(). */
int t_domains(void);

int t_keys_in_use(void);

/* mprotect()/pkey_mprotect() calls mpkit made so far. */
unsigned long long t_mprotects(void);

/*
 * The calling thread holds rights r to d, and the memory at p obeys them:
 * reads fault only under MPK_NONE, writes fault unless MPK_RW.  The touches
 * run in forked children, which inherit this thread's rights (hw) or the
 * page protections (soft; single-threaded tests only: soft is a union).
 */
#define CHECK_RIGHTS(d, p, r)                                                \
	do {                                                                 \
		int t_r_ = (r);                                              \
		void *t_p_ = (p);                                            \
		int t_got_ = mpk_get(d);                                     \
		if (t_got_ != t_r_)                                          \
			t_fail("mpk_get(%s) = %d, want %d", #d, t_got_, t_r_); \
		if (t_r_ == MPK_NONE)                                        \
			CHECK_FAULT(t_read_in_child(t_p_), d, t_p_);         \
		else                                                         \
			CHECK_NO_FAULT(t_read_in_child(t_p_));               \
		if (t_r_ == MPK_RW)                                          \
			CHECK_NO_FAULT(t_write_in_child(t_p_));              \
		else                                                         \
			CHECK_FAULT(t_write_in_child(t_p_), d, t_p_);        \
	} while (0)

/* CHECK_ERR in a loop: on failure also say which case it was. */
#define CHECK_ERR_CASE(expr, E, ...)                                         \
	do {                                                                 \
		int t_n_ = t_failures;                                       \
		CHECK_ERR(expr, E);                                          \
		if (t_failures != t_n_) {                                    \
			fprintf(stderr, "    (case: ");                      \
			fprintf(stderr, __VA_ARGS__);                        \
			fprintf(stderr, ")\n");                              \
		}                                                            \
	} while (0)

/* Fill / check a byte pattern that depends on the offset and a seed. */
void t_fill(void *p, size_t len, unsigned seed);

int t_intact(const void *p, size_t len, unsigned seed);

/* The /proc/self/maps entry covering addr. */
struct t_map {
	unsigned long lo, hi;
	char perms[5];
	unsigned long inode;
	char name[256]; /* "" for plain anonymous memory */
};

/* 1 and *m filled if a mapping covers addr, 0 if none does. */
int t_map_of(const void *addr, struct t_map *m);

/* Whether any byte of [p, p+len) is mapped. */
int t_any_mapped(const void *p, size_t len);

/* Whether any byte of [p, p+len) is memory: mapped and not part of an
 * mpkit window's reservation (PROT_NONE, named mpk:mpkit-window where the
 * kernel names anonymous memory), where freed domain memory goes back. */
int t_any_usable(const void *p, size_t len);

/* A fresh private anonymous read/write mapping of n pages. */
void *t_map_anon(size_t pages);

#endif
