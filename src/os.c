/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "os.h"

#ifndef SYS_pkey_mprotect
#define SYS_pkey_mprotect 329
#define SYS_pkey_alloc 330
#define SYS_pkey_free 331
#endif
#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

static unsigned long long mprotect_calls;

static void count_mprotect(void)
{
	__atomic_add_fetch(&mprotect_calls, 1, __ATOMIC_RELAXED);
}

unsigned long long mpk_os_mprotect_count(void)
{
	return __atomic_load_n(&mprotect_calls, __ATOMIC_RELAXED);
}

/*
 * Fault injection for tests (not public, not exported from the shared
 * library: tests linked with libmpkit.a call it).  The nth next call of the
 * kind (1: the very next) fails with err, once; -1: every call fails until
 * disarmed; 0 disarms.  Kinds:
 * MPK_OS_FAIL_MPROTECT (mprotect and pkey_mprotect), MPK_OS_FAIL_PKEY_ALLOC.
 */
static int fail_in[2], fail_err[2];

void mpk__test_fail(int kind, int nth, int err)
{
	if (kind < 0 || kind > 1)
		return;
	__atomic_store_n(&fail_err[kind], err, __ATOMIC_RELAXED);
	__atomic_store_n(&fail_in[kind], nth, __ATOMIC_RELEASE);
}

static bool injected(int kind)
{
	int n = __atomic_load_n(&fail_in[kind], __ATOMIC_ACQUIRE);
	if (n == -1) {
		errno = __atomic_load_n(&fail_err[kind], __ATOMIC_RELAXED);
		return true;
	}
	while (n > 0) {
		if (__atomic_compare_exchange_n(&fail_in[kind], &n, n - 1, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			if (n != 1)
				return false;
			errno = __atomic_load_n(&fail_err[kind], __ATOMIC_RELAXED);
			return true;
		}
	}
	return false;
}

int mpk_os_pkey_alloc(unsigned flags, unsigned rights)
{
	if (injected(MPK_OS_FAIL_PKEY_ALLOC))
		return -1;
	return (int)syscall(SYS_pkey_alloc, flags, rights);
}

int mpk_os_pkey_free(int key)
{
	return (int)syscall(SYS_pkey_free, key);
}

int mpk_os_pkey_mprotect(void *addr, size_t len, int prot, int key)
{
	count_mprotect();
	if (injected(MPK_OS_FAIL_MPROTECT))
		return -1;
	return (int)syscall(SYS_pkey_mprotect, addr, len, prot, key);
}

int mpk_os_mprotect(void *addr, size_t len, int prot)
{
	count_mprotect();
	if (injected(MPK_OS_FAIL_MPROTECT))
		return -1;
	return mprotect(addr, len, prot);
}

void *mpk_os_map(size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* A mapping with an unmapped page on each side.  Adjacent anonymous
 * mappings with the same flags merge into one VMA; then every mprotect of
 * one of them splits the VMA and the next merges it back, which doubles
 * the cost of a soft-backend switch on small regions (make bench shows
 * it).  The holes keep two domains' regions apart where the kernel cannot
 * name anonymous mappings. */
void *mpk_os_map_apart(size_t len, int prot)
{
	size_t page = mpk_os_page_size();
	char *p;

	if (len > SIZE_MAX - 2 * page) {
		errno = ENOMEM;
		return NULL;
	}
	p = mpk_os_map(len + 2 * page, prot);
	if (!p)
		return NULL;
	munmap(p, page);
	munmap(p + page + len, page);
	return p + page;
}

int mpk_os_unmap(void *addr, size_t len)
{
	return munmap(addr, len);
}

int mpk_os_mlock(const void *addr, size_t len)
{
	return (int)syscall(SYS_mlock, addr, len);
}

int mpk_os_munlock(const void *addr, size_t len)
{
	return (int)syscall(SYS_munlock, addr, len);
}

pid_t mpk_os_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

int mpk_os_tgkill(pid_t tgid, pid_t tid, int sig)
{
	return (int)syscall(SYS_tgkill, tgid, tid, sig);
}

size_t mpk_os_page_size(void)
{
	static size_t page;
	if (!page)
		page = (size_t)sysconf(_SC_PAGESIZE);
	return page;
}

void mpk_os_name_region(void *addr, size_t len, const char *name)
{
	char buf[80];
	int saved = errno;

	snprintf(buf, sizeof(buf), "mpk:%s", name);
	/* The kernel only accepts printable characters without []\\$`. */
	for (char *c = buf; *c; c++)
		if (strchr("[]\\$`", *c))
			*c = '_';
	prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, addr, len, buf);
	errno = saved;
}

/* Whether the kernel names anonymous memory (Linux 5.17 and later, built
 * with CONFIG_ANON_VMA_NAME): name a scratch page and see.  0 and the
 * errno of the refusal in *err when it does not. */
int mpk_os_region_names(int *err)
{
	int saved = errno, ok = 0;
	size_t len = mpk_os_page_size();
	void *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	*err = 0;
	if (p == MAP_FAILED) {
		*err = errno;
	} else {
		ok = prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, p, len, "mpk:probe") == 0;
		if (!ok)
			*err = errno;
		munmap(p, len);
	}
	errno = saved;
	return ok;
}

int mpk_os_range_is_private_anon_rw(const void *addr, size_t len)
{
	unsigned long want = (unsigned long)addr, end = want + len;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return -1;
	while (want < end && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, ino;
		char perms[5], path[256] = "";
		int n = sscanf(line, "%lx-%lx %4s %*s %*s %lu %255[^\n]", &lo,
			       &hi, perms, &ino, path);
		if (n < 4)
			continue;
		if (hi <= want)
			continue;
		if (lo > want)
			break; /* a hole */
		/* Named anonymous memory shows as [anon:...]; other paths
		 * ([heap], [stack], files) are not ours to take. */
		char *p = path;
		while (*p == ' ')
			p++;
		if (strcmp(perms, "rw-p") || ino != 0 ||
		    (*p && strncmp(p, "[anon:", 6)))
			break;
		want = hi;
	}
	fclose(f);
	return want >= end;
}
