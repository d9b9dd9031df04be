/* SPDX-License-Identifier: MIT */
/*
 * The new-code pitfalls (t_pit_newcode_*): ways to make code appear after
 * mpk_lockdown() without PROT_EXEC in mmap or mprotect.  Each plants "old"
 * code, which returns 1, and tries to make the same address run "new"
 * code, which sets PKRU to 0 (every key open) and returns 2; then reads
 * the closed secret.
 */
#ifndef MPK_TEST_NEWCODE_H
#define MPK_TEST_NEWCODE_H

#include "t_pit.h"

#include <limits.h>

extern const unsigned char newcode_old[6];  /* mov eax,1; ret */
extern const unsigned char newcode_new[15]; /* xor ecx,edx,eax; wrpkru; mov eax,2; ret */

/* Calls the code at x: the new code reads the secret (LEAKED, or SIGILL
 * without PKU), the old one leaves it (KEPT), anything else is ERROR. */
int newcode_call(const void *x);

/* The new code written into a fresh PROT_READ|PROT_WRITE mapping and
 * called: executable only if the personality made it so. */
int newcode_call_rw(void);

/* A file of two pages, in the test program's directory (where code may
 * be mapped): the old code at 0, the new at one page; its name into path
 * (PATH_MAX).  The test removes it at the end.  0 or -1. */
int newcode_file(char *path);

#endif
