/* SPDX-License-Identifier: MIT */
/*
 * A guarded library's own options, as --lib and MPKIT_GUARD_LIB's
 * entries spell them: NAME[,deny=write|all][,heap|,noheap].  One parser
 * for the command (which refuses a bad word before PROG runs) and its
 * LD_PRELOAD helper (which applies them).
 */
#ifndef MPK_GUARD_OPTS_H
#define MPK_GUARD_OPTS_H

/* What the entry says; -1 where it says nothing (the global --deny,
 * --heap then). */
struct guard_opts {
	int deny_all; /* deny=all 1, deny=write 0 */
	int heap;     /* heap 1, noheap 0 */
};

/* entry cut at its first comma (in place), the words after it read into
 * *o: NULL, or the first word it does not know (cut out in place). */
const char *guard_opts_parse(char *entry, struct guard_opts *o);

/* The words, for messages. */
#define GUARD_OPTS_WORDS "deny=write, deny=all, heap, noheap"

#endif
