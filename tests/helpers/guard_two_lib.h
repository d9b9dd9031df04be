/* SPDX-License-Identifier: MIT */
/* libguardtwo.so's functions (guard_two_lib.c), for it and guard_two_prog.c. */
#ifndef GUARD_TWO_LIB_H
#define GUARD_TWO_LIB_H
long g2_add(long by);
long *g2_ptr(void);
long g2_call(long by);
long g2_back(long by);
void g2_poke(long *p, long v);
long g2_via(long (*fn)(long), long v);
long *g2_block(void);
#endif
