/* SPDX-License-Identifier: MIT */
/* libguardxx.so's exports (tests/helpers/guard_xxlib.cc), for guard-xxprog. */
#ifndef GUARD_XX_H
#define GUARD_XX_H

#ifdef __cplusplus
extern "C" {
#endif
/* Adds v to the state and throws std::runtime_error("thrown in the
 * library STATE"). */
long x_throw(long v);
/* cb(v) called from inside, a destructor of the library's in between. */
long x_apply(long (*cb)(long), long v);
/* cb() as its first instructions' call (written in assembly: the
 * patch moves that call aside). */
long x_first(long (*cb)(void));
/* The same with a direct call, to a function of its own that throws
 * std::runtime_error("thrown first thing in the library"). */
long x_first_direct(void);
/* How many of the library's destructors have run. */
long x_undone(void);
/* The state's address, as a library's API might hand it out. */
long *x_ptr(void);
/* ready() called from inside, then a read of fd: a thread blocks in the
 * library (a cancellation point). */
long x_wait(int fd, void (*ready)(void));
/* ready() called from inside, then pthread_testcancel(): a deferred
 * cancellation acted on in the library. */
long x_test(void (*ready)(void));
#ifdef __cplusplus
}
#endif

#endif
