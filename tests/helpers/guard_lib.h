/* SPDX-License-Identifier: MIT */
/* libguardtest.so's functions (guard_lib.c), for it and guard_prog.c. */
#ifndef GUARD_LIB_H
#define GUARD_LIB_H
long g_add(long by);
long g_add2(long by);
long g_sum(int n, ...);
double g_many(int a, int b, int c, int d, int e, int f, int g, int h, double x);
long g_rec(int n);
long g_apply(long (*fn)(long), long v);
long g_store(long *p);
long g_zero(void);
long g_loop(long n);
long *g_ptr(void);
long *g_tail(void);
long g_spawn(long v);
#endif
