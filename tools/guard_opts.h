/* SPDX-License-Identifier: MIT */
/*
 * A guarded library's own options, as --lib and MPKIT_GUARD_LIB's
 * entries spell them: NAME[,deny=write|all][,heap|,noheap][,out=GLOB]
 * [,keep=GLOB]....  One parser for the command (which refuses a bad word
 * before PROG runs) and its LD_PRELOAD helper (which applies them).
 */
#ifndef MPK_GUARD_OPTS_H
#define MPK_GUARD_OPTS_H

/* out= and keep= words a library may say, at most. */
#define GUARD_RULES 16

/* out=GLOB (out 1) or keep=GLOB (0): the blocks allocated under an
 * export whose name matches are the caller's, or the library's, whatever
 * the allocator-name rule says (guard_heap.c). */
struct guard_rule {
	const char *glob;
	int out;
};

/* What the entry says; -1 where it says nothing (the global --deny,
 * --heap then). */
struct guard_opts {
	int deny_all; /* deny=all 1, deny=write 0 */
	int heap;     /* heap 1, noheap 0 */
	int nrules;
	struct guard_rule rule[GUARD_RULES]; /* in the entry's order */
	const char *why; /* a bad word's fault; NULL: a word it does not know */
};

/* entry cut at its first comma (in place), the words after it read into
 * *o (the globs point into entry): NULL, or the first bad word (cut out
 * in place), o->why saying what is wrong with it. */
const char *guard_opts_parse(char *entry, struct guard_opts *o);

/* The last of the n rules whose glob matches an export's name (the last
 * word said wins): its index, or -1. */
int guard_rules_match(const struct guard_rule *r, int n, const char *name);

/* The words, for messages. */
#define GUARD_OPTS_WORDS "deny=write, deny=all, heap, noheap, out=NAME, keep=NAME"

#endif
