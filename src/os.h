/* SPDX-License-Identifier: MIT */
/*
 * The Linux layer: raw system calls (so mpkit builds with a libc that lacks
 * the pkey wrappers), with the counters tests read, and /proc parsing.
 */
#ifndef MPK_OS_H
#define MPK_OS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

int mpk_os_pkey_alloc(unsigned flags, unsigned rights);
int mpk_os_pkey_free(int key);
int mpk_os_pkey_mprotect(void *addr, size_t len, int prot, int key);
int mpk_os_mprotect(void *addr, size_t len, int prot);
void *mpk_os_map(size_t len, int prot);
void *mpk_os_map_apart(size_t len, int prot);
int mpk_os_unmap(void *addr, size_t len);
/* Raw mlock()/munlock(): sanitizers make the libc ones no-ops. */
int mpk_os_mlock(const void *addr, size_t len);
int mpk_os_munlock(const void *addr, size_t len);
pid_t mpk_os_gettid(void);
int mpk_os_tgkill(pid_t tgid, pid_t tid, int sig);
size_t mpk_os_page_size(void);

/* Give [addr, addr+len) the name "mpk:NAME" in /proc/PID/maps; best effort
 * (Linux 5.17+ with CONFIG_ANON_VMA_NAME). */
void mpk_os_name_region(void *addr, size_t len, const char *name);
int mpk_os_region_names(int *err);

/* Whether [addr, addr+len) is wholly covered by private anonymous mappings
 * with exactly PROT_READ|PROT_WRITE.  -1/errno if /proc cannot be read. */
int mpk_os_range_is_private_anon_rw(const void *addr, size_t len);

/* Test-only fault injection (see os.c); tests declare it themselves. */
enum { MPK_OS_FAIL_MPROTECT = 0, MPK_OS_FAIL_PKEY_ALLOC = 1 };
void mpk__test_fail(int kind, int nth, int err);

/* mprotect()/pkey_mprotect() calls made so far. */
unsigned long long mpk_os_mprotect_count(void);

#endif
