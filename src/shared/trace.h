/* SPDX-License-Identifier: MIT */
/*
 * The backtrace of mpkit's reports, and the text they are written into,
 * async-signal-safe (static buffers, open/read/readlink, no malloc, no
 * stdio).  A frame is one line:
 *
 *	mpkit:     #0 0x55d4c8a4b161 in release (/tmp/df+0x1161)
 *
 * its address, the function where the loaded object exports one, and in
 * parentheses the module (its path in /proc/self/maps) and the offset in
 * that file.  `mpkit symbolize` and `mpkit run` read these lines back and
 * replace the parentheses with the function and FILE:LINE from the
 * module's debug information (tools/symbolize.c).  The library, the
 * drop-in allocator and the mpkit command (which parses) link copies.
 */
#ifndef MPK_TRACE_H
#define MPK_TRACE_H

#include <stddef.h>
#include <stdint.h>

/* Text being built; what does not fit is cut (len stops at size - 1). */
struct mpk__text {
	char *buf;
	size_t size, len;
};
void mpk__text_put(struct mpk__text *t, const char *s, size_t n);
void mpk__text_str(struct mpk__text *t, const char *s);
void mpk__text_hex(struct mpk__text *t, uintptr_t v);   /* 0x... */
void mpk__text_dec(struct mpk__text *t, unsigned long long v);

/* Every frame line starts with this. */
#define MPK_TRACE_PREFIX "mpkit:     #"
/* A trace whose first frame is a faulting instruction, not a return
 * address, has this heading (the symbolizer looks up that one as it is,
 * the others one byte back, in their call). */
#define MPK_TRACE_HEAD_FAULT "mpkit:   backtrace, from the faulting instruction"
#define MPK_TRACE_HEAD "mpkit:   backtrace"

/*
 * The n frames of addrs (return addresses, as mpk__bt() gives them) as a
 * heading and frame lines.  ip not 0: the trace starts at the frame that
 * is ip (a fault's instruction), found among them.  Else it starts at the
 * first frame outside mpkit: leading frames of mpkit's own module (unless
 * that is the program itself: a static link) and of modules named
 * libmpkit* (the drop-in allocator, the watch helper) are left out, and
 * the heading says how many.  head: the heading's words (NULL: "mpkit:
 * backtrace"); a colon and a newline follow them.
 */
void mpk__trace_format(struct mpk__text *t, void *const *addrs, int n, uintptr_t ip, const char *head);

#endif
