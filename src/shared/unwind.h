/* SPDX-License-Identifier: MIT */
/*
 * Backtraces on any C library: the compiler's unwinder (libgcc's
 * _Unwind_Backtrace, what glibc's backtrace(3) calls, linked statically
 * into the library and the drop-in) and names from glibc's
 * backtrace_symbols_fd(3), elsewhere (musl has no <execinfo.h>) from
 * dladdr(3) in glibc's format ("file(sym+0xoff)[addr]") so reports read
 * the same.  Async-signal-safe as glibc's are (on musl the unwinder is
 * primed once outside signal context: mpk__bt_prime()).
 * The library, the watch helper and the tests each link a copy.  Not
 * installed.
 */
#ifndef MPK_UNWIND_H
#define MPK_UNWIND_H

#include <stddef.h>
#include <stdint.h>

/* Up to max return addresses, the caller's first (as backtrace(3)). */
int mpk__bt(void **frames, int max);
/* One line per frame to fd (as backtrace_symbols_fd(3)). */
void mpk__bt_names_fd(void *const *frames, int n, int fd);
/* Load and set up whatever the unwinder needs on first use. */
void mpk__bt_prime(void);
/* Async-signal-safe output: n bytes, a string, 0x and a number in hex. */
void mpk__fd_put(int fd, const char *s, size_t n);
void mpk__fd_puts(int fd, const char *s);
void mpk__fd_hex(int fd, uintptr_t v);

#endif
