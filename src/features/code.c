/* SPDX-License-Identifier: MIT */
/*
 * Code memory, on the core's services (core.h).  JIT code
 * (mpk_code_alloc): pages mapped read, write and execute whose key makes
 * them read-only to every thread but the one that opens the domain to
 * write; without a key they flip between read+execute and read+write
 * (the core's code regions: src/core/code_region.c).  Execute-only memory
 * (mpk_exec_only): PROT_EXEC alone, which the kernel builds from a key of
 * its own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>

#include "../core/core.h"

MPK_EXPORT void *mpk_code_alloc(mpk_domain *d, size_t len)
{
	if (mpk__ensure_init())
		return NULL;
	void *p = mpk__alloc_region(d, len, MPK__REGION_EXEC);
	if (p && mpk__fault_handler_ensure(NULL)) {
		int err = errno;
		mpk_free(d, p);
		errno = err;
		return NULL;
	}
	return p;
}

/* The key the kernel gave execute-only memory here, -1 before the first. */
static int exec_key = -1;

MPK_EXPORT int mpk_exec_only(void *addr, size_t len)
{
	size_t page = mpk_os_page_size();
	int rc = -1, err = EINVAL;

	if (mpk__ensure_init())
		return -1;
	if (!addr || !len || ((uintptr_t)addr & (page - 1)) ||
	    len > UINTPTR_MAX - (uintptr_t)addr - page) {
		errno = EINVAL;
		return -1;
	}
	len = (len + page - 1) & ~(page - 1);
	if (mpk__backend() != MPK_BACKEND_HW) {
		/* Without keys PROT_EXEC implies read on x86: refuse rather
		 * than hand back memory that only looks execute-only. */
		errno = ENOTSUP;
		return -1;
	}
	mpk__core_lock();
	/* Domain memory keeps its domain's key, and the windows stay
	 * mpkit's.  So do ranges kept after mpk_lockdown(), whose filter
	 * refuses PROT_EXEC there (EPERM, or the process is killed): said
	 * here, as for the windows, before any call. */
	if (mpk__range_overlaps(addr, len) || mpk__range_kept(addr, len))
		goto out;
	int old = mpk_os_range_prot(addr, len), given = 0;
	if (old < 0) {
		err = errno;
		goto out;
	}
	for (;;) {
		if (mpk_os_mprotect(addr, len, PROT_EXEC)) {
			err = errno;
			/* Done already by a round before a key was given back
			 * (or in part, across mappings): as it was. */
			mpk_os_mprotect(addr, len, old);
			break;
		}
		int k = mpk_os_vma_pkey(addr);
		if (k > 0) {
			__atomic_store_n(&exec_key, k, __ATOMIC_RELAXED);
			rc = 0;
			break;
		}
		/* k 0: the kernel found no key for it (mpkit holds them all)
		 * and left the pages readable: give it one, or undo. */
		if (k < 0 || mpk__key_give_back()) {
			err = errno;
			mpk_os_mprotect(addr, len, old);
			break;
		}
		given++;
	}
	/* Failed after all: the keys given back are mpkit's again. */
	while (rc && given-- > 0 && !mpk__key_take_spare())
		;
out:
	mpk__core_unlock();
	if (rc)
		errno = err;
	return rc;
}

MPK_EXPORT int mpk_exec_only_key(void)
{
	int k = __atomic_load_n(&exec_key, __ATOMIC_RELAXED);
	if (k < 0)
		errno = ENOENT;
	return k;
}
