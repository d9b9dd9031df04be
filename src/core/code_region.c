/* SPDX-License-Identifier: MIT */
/*
 * Code regions in the core (mpk_code_alloc: src/features/code.c).  With a
 * key, the pages are read, write and execute, and the key alone decides
 * who writes; x86 keys never govern instruction fetch, so every thread runs
 * the code meanwhile.  Without a key (soft, or a virtual domain) the pages
 * flip by mprotect() between read+execute and read+write, never both; a
 * thread that runs into the write window waits for it in the fault hook
 * below.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>

#include "internal.h"

bool mpk__code_fault(siginfo_t *si, void *uc)
{
	if (si->si_code != SEGV_ACCERR || !mpk_arch_fault_is_fetch(uc))
		return false;
	struct mpk_region *r = mpk__region_lookup(si->si_addr);
	if (!r || !r->exec)
		return false;
	struct mpk_domain *d = r->domain;
	/* A writer holds the window, or just closed it: run the code once it
	 * is executable.  Not the writer itself (it would wait for itself),
	 * nor code no thread may read: those are real faults. */
	if (!mpk__domain_ok(d) || __atomic_load_n(&d->prot, __ATOMIC_ACQUIRE) == PROT_NONE ||
	    mpk__soft_get(d) == MPK_RW)
		return false;
	/* Sleep rather than spin: the writer needs the CPU to close it. */
	struct timespec ts = { 0, 20000 };
	while (__atomic_load_n(&d->prot, __ATOMIC_ACQUIRE) & PROT_WRITE)
		nanosleep(&ts, NULL);
	return true;
}
