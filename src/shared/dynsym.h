/* SPDX-License-Identifier: MIT */
/*
 * The size of a dynamic symbol, from the tables of the loaded object that
 * holds it: what glibc's dladdr1(RTLD_DL_SYMENT) gives, on any C library
 * (musl has no dladdr1).  For `mpkit watch` (a global's size) and the
 * benchmarks (a function's extent).  Not installed.
 */
#ifndef MPK_DYNSYM_H
#define MPK_DYNSYM_H

#include <stddef.h>

/* The st_size of a defined dynamic symbol whose value is addr, or 0. */
size_t mpk__dynsym_size(const void *addr);

#endif
