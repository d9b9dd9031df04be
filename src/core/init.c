/* SPDX-License-Identifier: MIT */
/* Backend selection, configuration from the environment, info and stats. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../shared/env.h"
#include "internal.h"
#include "../shared/unwind.h"
#include "os.h"

struct mpk_global mpk_g = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.budget = MPK_ARCH_NKEYS ? MPK_ARCH_NKEYS - 1 : 0,
	.next_uid = 1,
};

/* The public structs keep these sizes for the life of the ABI: new members
 * take the reserved space (see docs/abi.md). */
_Static_assert(sizeof(struct mpk_info) == 128, "struct mpk_info changed size");
_Static_assert(sizeof(struct mpk_stats) == 128, "struct mpk_stats changed size");
_Static_assert(sizeof(struct mpk_heap_stats) == 64, "struct mpk_heap_stats changed size");

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* Whether the kernel hands out keys to this process: take one, give it back. */
static bool kernel_has_pkeys(void)
{
	struct mpk_arch_caps caps;
	int saved = errno;

	mpk_arch_caps(&caps);
	if (!caps.cpu_keys || !caps.os_enabled)
		return false;
	/* pkey_alloc() writes the new key's rights into this thread's
	 * PKRU; put that key's bits back (only them: see count_free_keys)
	 * so probing leaves no key open. */
	mpk_reg_t reg = mpk_arch_reg_read();
	int key = mpk_os_pkey_alloc(0, 0);
	if (key >= 0) {
		mpk_reg_t mask = mpk_arch_key_mask(key);
		mpk_arch_reg_update(mask, reg & mask);
		mpk_os_pkey_free(key);
	}
	bool ok = key >= 0 || errno == ENOSPC; /* all taken still means supported */
	errno = saved;
	return ok;
}

/* Why initialisation failed, one line (see env.c); "" when it did not. */
static char init_msg[256];

static void do_init(void)
{
	int want = mpk__env_parse(MPK_ENV_BACKEND, 0);
	int budget = mpk__env_parse(MPK_ENV_KEYS, mpk_g.budget);
	int meta = mpk__env_parse(MPK_ENV_HEAP_META, 0);
	int secret = mpk__env_parse(MPK_ENV_SECRETMEM, 0);
	int report = mpk__env_parse(MPK_ENV_REPORT, 0);
	bool hw = kernel_has_pkeys();

	/* First of all mpkit's fork handlers: layers above register theirs
	 * with mpk__atfork_register() (fork.c), not pthread_atfork(). */
	mpk__atfork_init();
	/* Whatever the unwinder sets up on first use (musl: its tables,
	 * with malloc()): now, before any lock of mpkit's is held, not in a
	 * fault report's signal handler. */
	mpk__bt_prime();

	if (want < 0 || budget < 0 || meta < 0 || secret < 0 || report < 0) {
		mpk__env_describe(want < 0	 ? MPK_ENV_BACKEND
				  : budget < 0 ? MPK_ENV_KEYS
				  : meta < 0   ? MPK_ENV_HEAP_META
				  : secret < 0 ? MPK_ENV_SECRETMEM
					       : MPK_ENV_REPORT,
				  init_msg, sizeof(init_msg));
		mpk_g.init_errno = EINVAL;
		return;
	}
	if (want == MPK_BACKEND_HW && !hw) {
		struct mpk_arch_caps caps;
		mpk_arch_caps(&caps);
		snprintf(init_msg, sizeof(init_msg),
			 "mpkit: MPKIT_BACKEND=\"hw\" but this machine has no protection keys "
			 "(CPU PKU: %s, enabled by the OS: %s, pkey_alloc: no): use soft or auto",
			 caps.cpu_keys ? "yes" : "no", caps.os_enabled ? "yes" : "no");
		mpk_g.init_errno = ENOTSUP;
		return;
	}
	mpk__report_setup();
	mpk_g.budget = budget;
	mpk_g.forced = want != 0;
	mpk_g.backend = want ? want : hw ? MPK_BACKEND_HW : MPK_BACKEND_SOFT;
	if (mpk_g.backend == MPK_BACKEND_HW)
		mpk__broadcast_setup();
}

/* Like mpk__ensure_init(), but a failure is only reported through errno
 * (mpk_info() reports, it does not complain). */
static int init_quietly(void)
{
	/* A registered thread: mpkit is set up, and registered it after. */
	if (likely(mpk__self))
		return 0;
	pthread_once(&init_once, do_init);
	if (unlikely(mpk_g.init_errno)) {
		errno = mpk_g.init_errno;
		return -1;
	}
	mpk__thread_register(); /* broadcasts find it without /proc */
	return 0;
}

int mpk__ensure_init(void)
{
	if (likely(!init_quietly()))
		return 0;
	mpk__env_complain(init_msg);
	return -1;
}

int mpk__backend(void)
{
	return mpk_g.backend;
}

void mpk__core_lock(void)
{
	pthread_mutex_lock(&mpk_g.lock);
}

void mpk__core_unlock(void)
{
	pthread_mutex_unlock(&mpk_g.lock);
}

MPK_EXPORT int mpk_init(void)
{
	return mpk__ensure_init();
}

MPK_EXPORT int mpk_backend(void)
{
	if (mpk__ensure_init())
		return -1;
	return mpk_g.backend;
}

MPK_EXPORT const char *mpk_backend_name(int backend)
{
	switch (backend) {
	case MPK_BACKEND_HW:
		return "hw";
	case MPK_BACKEND_SOFT:
		return "soft";
	}
	errno = EINVAL;
	return NULL;
}

MPK_EXPORT const char *mpk_version(void)
{
	return MPK_VERSION_STRING;
}

MPK_EXPORT int mpk_version_number(void)
{
	return MPK_VERSION_NUMBER;
}

/*
 * Keys the kernel would give now: take them all, then give them back.
 * pkey_alloc() opens each new key in this thread; only those keys' bits go
 * back to what they were, in one restartable update, before the keys are
 * freed: writing the whole saved PKRU back would undo a revocation that a
 * broadcast made in this thread meanwhile (t_info_concurrent_destroy).
 */
static int count_free_keys(void)
{
	int keys[MPK_ARCH_NKEYS ? MPK_ARCH_NKEYS : 1], n = 0, saved = errno;
	mpk_reg_t reg = mpk_arch_reg_read(), mask = 0;

	while (n < MPK_ARCH_NKEYS && (keys[n] = mpk_os_pkey_alloc(0, 0)) >= 0)
		mask |= mpk_arch_key_mask(keys[n++]);
	if (mask)
		mpk_arch_reg_update(mask, reg & mask);
	for (int i = 0; i < n; i++)
		mpk_os_pkey_free(keys[i]);
	errno = saved;
	return n;
}

/* Whether PROT_EXEC alone yields memory that cannot be read. */
static bool exec_only_available(struct mpk_arch_caps *caps)
{
	/* The kernel builds execute-only mappings from a key; without keys
	 * PROT_EXEC implies read on x86. */
	return caps->cpu_keys && caps->os_enabled && kernel_has_pkeys();
}

MPK_EXPORT int mpk_info(struct mpk_info *info)
{
	struct mpk_arch_caps caps;
	int rc;

	if (!info) {
		errno = EINVAL;
		return -1;
	}
	rc = init_quietly();
	int err = errno;
	memset(info, 0, sizeof(*info));
	mpk_arch_caps(&caps);
	info->cpu_pku = caps.cpu_keys;
	info->cpu_ospke = caps.os_enabled;
	/* The probes hold keys for a moment and put back a PKRU read before
	 * them: under the lock, so a concurrent create does not find the
	 * kernel out of keys and a concurrent destroy's revocation in this
	 * thread is not undone. */
	pthread_mutex_lock(&mpk_g.lock);
	info->kernel_pkeys = kernel_has_pkeys();
	info->exec_only = exec_only_available(&caps);
	info->keys_free = info->kernel_pkeys ? count_free_keys() : 0;
	info->backend = mpk_g.backend;
	info->backend_forced = mpk_g.forced;
	info->key_budget = mpk_g.budget;
	info->keys_in_use = mpk_g.keys_held;
	info->domains = mpk_g.ndomains;
	pthread_mutex_unlock(&mpk_g.lock);
	if (info->cpu_pku && info->cpu_ospke) {
		info->pkru_valid = 1;
		info->pkru = mpk_arch_reg_read();
	}
	info->region_names = mpk_os_region_names(&info->region_names_errno);
	/* Vaults use memfd_secret where it works, unless MPKIT_SECRETMEM=off. */
	info->secretmem = !mpk__secretmem_probe();
	info->secretmem_errno = info->secretmem ? 0 : errno;
	info->secretmem_vaults = info->secretmem && mpk__env_parse(MPK_ENV_SECRETMEM, 0) != MPK_SECRETMEM_OFF;
	if (rc) {
		info->error = init_msg;
		/* Report what would run had the environment been valid. */
		info->backend = info->kernel_pkeys ? MPK_BACKEND_HW : MPK_BACKEND_SOFT;
		errno = err;
		return -1;
	}
	return 0;
}

MPK_EXPORT int mpk_stats_get(struct mpk_stats *stats)
{
	if (!stats) {
		errno = EINVAL;
		return -1;
	}
	memset(stats, 0, sizeof(*stats));
	stats->mprotect_calls = mpk_os_mprotect_count();
	stats->broadcasts = mpk__broadcast_count();
	stats->faults_reported = __atomic_load_n(&mpk_g.faults, __ATOMIC_RELAXED);
	return 0;
}

MPK_EXPORT int mpk_set_key_budget(int keys)
{
	if (mpk__ensure_init())
		return -1;
	if (keys < 1 || keys > MPK_ARCH_NKEYS - 1) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&mpk_g.lock);
	int held = mpk_g.keys_held;
	if (keys < held) {
		pthread_mutex_unlock(&mpk_g.lock);
		errno = EBUSY;
		return -1;
	}
	mpk_g.budget = keys;
	pthread_mutex_unlock(&mpk_g.lock);
	return 0;
}
