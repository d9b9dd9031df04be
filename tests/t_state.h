/* SPDX-License-Identifier: MIT */
/*
 * Helpers for tests that check state: that rights really hold (by touching
 * the memory in a child), what /proc/self/maps says, and the counters a
 * failed call must leave alone.  Public API and libc only, like the tests.
 */
#ifndef MPK_TEST_STATE_H
#define MPK_TEST_STATE_H

#include "t.h"

static inline size_t t_page(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* Live domains according to mpk_info(). */
static inline int t_domains(void)
{
	struct mpk_info i;
	REQUIRE(mpk_info(&i) == 0);
	return i.domains;
}

static inline int t_keys_in_use(void)
{
	struct mpk_info i;
	REQUIRE(mpk_info(&i) == 0);
	return i.keys_in_use;
}

/* mprotect()/pkey_mprotect() calls mpkit made so far. */
static inline unsigned long long t_mprotects(void)
{
	struct mpk_stats s;
	REQUIRE(mpk_stats_get(&s) == 0);
	return (unsigned long long)s.mprotect_calls;
}

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
static inline void t_fill(void *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		((unsigned char *)p)[i] = (unsigned char)(i * 31 + seed);
}

static inline int t_intact(const void *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		if (((const unsigned char *)p)[i] != (unsigned char)(i * 31 + seed))
			return 0;
	return 1;
}

/* The /proc/self/maps entry covering addr. */
struct t_map {
	unsigned long lo, hi;
	char perms[5];
	unsigned long inode;
	char name[256]; /* "" for plain anonymous memory */
};

/* 1 and *m filled if a mapping covers addr, 0 if none does. */
static inline int t_map_of(const void *addr, struct t_map *m)
{
	unsigned long a = (unsigned long)addr;
	char line[512];
	int found = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	REQUIRE(f);
	while (!found && fgets(line, sizeof(line), f)) {
		struct t_map e = { 0 };
		int n = sscanf(line, "%lx-%lx %4s %*s %*s %lu %255[^\n]", &e.lo,
			       &e.hi, e.perms, &e.inode, e.name);
		if (n < 4 || a < e.lo || a >= e.hi)
			continue;
		size_t skip = strspn(e.name, " ");
		memmove(e.name, e.name + skip, strlen(e.name + skip) + 1);
		*m = e;
		found = 1;
	}
	fclose(f);
	return found;
}

/* Whether any byte of [p, p+len) is mapped. */
static inline int t_any_mapped(const void *p, size_t len)
{
	struct t_map m;
	for (size_t off = 0; off < len; off += t_page())
		if (t_map_of((const char *)p + off, &m))
			return 1;
	return 0;
}

/* Whether any byte of [p, p+len) is memory: mapped and not part of an
 * mpkit window's reservation (PROT_NONE, named mpk:mpkit-window where the
 * kernel names anonymous memory), where freed domain memory goes back. */
static inline int t_any_usable(const void *p, size_t len)
{
	struct t_map m;
	for (size_t off = 0; off < len; off += t_page())
		if (t_map_of((const char *)p + off, &m) &&
		    !(!strcmp(m.perms, "---p") &&
		      (!m.name[0] || !strcmp(m.name, "[anon:mpk:mpkit-window]"))))
			return 1;
	return 0;
}

/* A fresh private anonymous read/write mapping of n pages. */
static inline void *t_map_anon(size_t pages)
{
	void *p = mmap(NULL, pages * t_page(), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(p != MAP_FAILED);
	return p;
}

#endif
