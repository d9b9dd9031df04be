/* SPDX-License-Identifier: MIT */
/* Helpers for the code, execute-only and watch tests: x86-64 snippets, the
 * protection /proc shows, and a child whose fault goes through mpkit's
 * handler (so the test sees the domain it names). */
#ifndef MPK_TEST_CODE_H
#define MPK_TEST_CODE_H

#include <stdbool.h>
#include <stdint.h>

#include "t.h"

typedef int (*t_fn)(void);

/* mov eax, v; ret */
void t_emit_ret(uint8_t *p, uint32_t v);

/* "rwxp"-style permissions /proc/self/maps shows for addr ("" if none). */
void t_perms(const void *addr, char out[5]);

/* The ProtectionKey smaps shows for the mapping at addr, -1 if none
 * (mpk_os_vma_pkey, not public; the fault checks confirm it independently). */
int t_vma_pkey(const void *addr);

struct t_mpk_child {
	void (*fn)(void *);
	void *arg;
};

struct t_fault t_mpk_write_fault_in_child(const char *domain, void (*fn)(void *), void *arg);

#endif

/* After patching code other threads run: serialise every thread's
 * instruction stream (x86 fetch is coherent; this is the cross-modifying
 * protocol's serialising step).  Best effort: old kernels lack it. */
#include <linux/membarrier.h>
void t_sync_core(void);
