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
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../arch/arch.h"
#include "os.h"
#include "testing.h"
#include "../shared/procmaps.h"

/*
 * Calls that change memory go through the arch layer's system-call site
 * once mpk_lockdown() has installed its filter (the filter trusts only that
 * site with domain memory), and through libc before, where sanitizers
 * watch mmap and munmap.  pkey calls always take the site.
 */
bool mpk_os_locked;
uint64_t *mpk_os_peer_lock;

static long sys_mem(long nr, long a, long b, long c, long d, long e, long f)
{
	long r;

	if (!mpk_os_is_locked())
		return syscall(nr, a, b, c, d, e, f);
	r = mpk_arch_syscall6(nr, a, b, c, d, e, f);
	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

static long sys_key(long nr, long a, long b, long c, long d)
{
	long r = mpk_arch_syscall6(nr, a, b, c, d, 0, 0);

	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

#ifndef SYS_pkey_mprotect
#define SYS_pkey_mprotect 329
#define SYS_pkey_alloc 330
#define SYS_pkey_free 331
#endif
#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

unsigned long long mpk_os_mprotect_calls;

static void count_mprotect(void)
{
	__atomic_add_fetch(&mpk_os_mprotect_calls, 1, __ATOMIC_RELAXED);
}

unsigned long long mpk_os_mprotect_count(void)
{
	return __atomic_load_n(&mpk_os_mprotect_calls, __ATOMIC_RELAXED);
}

/*
 * Fault injection for tests (not public, not exported from the shared
 * library: tests linked with libmpkit.a call it).  The nth next call of the
 * kind (1: the very next) fails with err, once; -1: every call fails until
 * disarmed; 0 disarms.  Kinds:
 * MPK_OS_FAIL_MPROTECT (mprotect and pkey_mprotect), MPK_OS_FAIL_PKEY_ALLOC.
 */
int mpk_os_fail_in[2];
static int fail_err[2];

void mpk__test_fail(int kind, int nth, int err)
{
	if (kind < 0 || kind > 1)
		return;
	__atomic_store_n(&fail_err[kind], err, __ATOMIC_RELAXED);
	__atomic_store_n(&mpk_os_fail_in[kind], nth, __ATOMIC_RELEASE);
}

static bool injected(int kind)
{
	int n = __atomic_load_n(&mpk_os_fail_in[kind], __ATOMIC_ACQUIRE);
	if (n == -1) {
		errno = __atomic_load_n(&fail_err[kind], __ATOMIC_RELAXED);
		return true;
	}
	while (n > 0) {
		if (__atomic_compare_exchange_n(&mpk_os_fail_in[kind], &n, n - 1, false,
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
	return (int)sys_key(SYS_pkey_alloc, flags, rights, 0, 0);
}

int mpk_os_pkey_free(int key)
{
	return (int)sys_key(SYS_pkey_free, key, 0, 0, 0);
}

int mpk_os_pkey_mprotect(void *addr, size_t len, int prot, int key)
{
	count_mprotect();
	if (injected(MPK_OS_FAIL_MPROTECT))
		return -1;
	return (int)sys_key(SYS_pkey_mprotect, (long)addr, (long)len, prot, key);
}

int mpk_os_mprotect(void *addr, size_t len, int prot)
{
	count_mprotect();
	if (injected(MPK_OS_FAIL_MPROTECT))
		return -1;
	if (!mpk_os_is_locked())
		return mprotect(addr, len, prot);
	return (int)sys_mem(SYS_mprotect, (long)addr, (long)len, prot, 0, 0, 0);
}

void *mpk_os_map(size_t len, int prot)
{
	return mpk_os_map_at(NULL, len, prot, 0);
}

void *mpk_os_map_at(void *addr, size_t len, int prot, int flags)
{
	return mpk_os_map_fd(addr, len, prot, flags | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

void *mpk_os_map_fd(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *p;

	if (!mpk_os_is_locked())
		p = mmap(addr, len, prot, flags, fd, off);
	else
		p = (void *)sys_mem(SYS_mmap, (long)addr, (long)len, prot, flags, fd, (long)off);
	return p == MAP_FAILED ? NULL : p;
}

int mpk_os_unmap(void *addr, size_t len)
{
	if (!mpk_os_is_locked())
		return munmap(addr, len);
	return (int)sys_mem(SYS_munmap, (long)addr, (long)len, 0, 0, 0, 0);
}

int mpk_os_madvise(void *addr, size_t len, int advice)
{
	return (int)sys_mem(SYS_madvise, (long)addr, (long)len, advice, 0, 0, 0);
}

void *mpk_os_remap_fixed(void *addr, size_t old_len, size_t new_len, void *to)
{
	long p = sys_mem(SYS_mremap, (long)addr, (long)old_len, (long)new_len,
			 MREMAP_MAYMOVE | MREMAP_FIXED, (long)to, 0);
	return p == -1 ? NULL : (void *)p;
}

int mpk_os_mlock(const void *addr, size_t len)
{
	return (int)sys_mem(SYS_mlock, (long)addr, (long)len, 0, 0, 0, 0);
}

int mpk_os_munlock(const void *addr, size_t len)
{
	return (int)sys_mem(SYS_munlock, (long)addr, (long)len, 0, 0, 0, 0);
}

pid_t mpk_os_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

int mpk_os_tgkill(pid_t tgid, pid_t tid, int sig)
{
	return (int)syscall(SYS_tgkill, tgid, tid, sig);
}

int mpk_os_futex_wait(int *word, int val, long timeout_ns)
{
	struct timespec ts = { timeout_ns / 1000000000, timeout_ns % 1000000000 };
	return (int)syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);
}

int mpk_os_futex_wake(int *word)
{
	return (int)syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

size_t mpk_os_page_size(void)
{
	static size_t page; /* atomic: any thread may be first */
	size_t p = __atomic_load_n(&page, __ATOMIC_RELAXED);
	if (!p) {
		p = (size_t)sysconf(_SC_PAGESIZE);
		__atomic_store_n(&page, p, __ATOMIC_RELAXED);
	}
	return p;
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

/* The mapping holding want, from the reader's place on (mappings come in
 * address order): 1 and v, or 0 if want lies in a hole or past the end. */
static int next_holding(struct mpk_procmaps *pm, struct mpk_procmaps_vma *v, uint64_t want)
{
	while (mpk_procmaps_next(pm, v) > 0)
		if (v->hi > want)
			return v->lo <= want;
	return 0;
}

int mpk_os_range_is_private_anon_rw(const void *addr, size_t len)
{
	uint64_t want = (uintptr_t)addr, end = want + len;
	struct mpk_procmaps pm;
	struct mpk_procmaps_vma v;

	if (mpk_procmaps_open(&pm, NULL, NULL))
		return -1;
	while (want < end && next_holding(&pm, &v, want)) {
		/* Named anonymous memory shows as [anon:...]; other paths
		 * ([heap], [stack], files) are not ours to take. */
		if (strcmp(v.perms, "rw-p") || v.inode != 0 ||
		    (v.path[0] && strncmp(v.path, "[anon:", 6)))
			break;
		want = v.hi;
	}
	mpk_procmaps_close(&pm);
	return want >= end;
}

/* PROT_* from a /proc/PID/maps permission string. */
static int prot_of_perms(const char *perms)
{
	return (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
	       (perms[2] == 'x' ? PROT_EXEC : 0);
}

int mpk_os_range_prot(const void *addr, size_t len)
{
	uint64_t want = (uintptr_t)addr, end = want + len;
	int prot = -1, err = ENOMEM;
	struct mpk_procmaps pm;
	struct mpk_procmaps_vma v;

	if (mpk_procmaps_open(&pm, NULL, NULL))
		return -1;
	while (want < end && next_holding(&pm, &v, want)) {
		int p = prot_of_perms(v.perms);
		if (prot >= 0 && p != prot) {
			err = EINVAL;
			break;
		}
		prot = p;
		want = v.hi;
	}
	mpk_procmaps_close(&pm);
	if (want < end) {
		errno = err;
		return -1;
	}
	return prot;
}

int mpk_os_vma_pkey(const void *addr)
{
	uint64_t a = (uintptr_t)addr;
	int key = -1;
	struct mpk_procmaps pm;
	struct mpk_procmaps_vma v;

	if (mpk_procmaps_open(&pm, NULL, "ProtectionKey"))
		return -1;
	if (next_holding(&pm, &v, a))
		key = (int)v.field;
	mpk_procmaps_close(&pm);
	if (key < 0)
		errno = ENOENT;
	return key;
}

ssize_t mpk_os_read_file(const char *path, char *buf, size_t size)
{
	size_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	while (len + 1 < size) {
		ssize_t k = read(fd, buf + len, size - 1 - len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			int e = errno;
			close(fd);
			errno = e;
			return -1;
		}
		if (!k)
			break;
		len += (size_t)k;
	}
	close(fd);
	buf[len] = 0;
	return (ssize_t)len;
}

/* getdents64's record (not in glibc's headers before 2.30). */
struct dirent64_rec {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

int mpk_os_dir_each(const char *path, bool (*fn)(int dirfd, const char *name, void *arg), void *arg)
{
	char buf[2048] __attribute__((aligned(8)));
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return -1;
	for (;;) {
		long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -1 : 0;
			break;
		}
		for (long at = 0; at < n;) {
			const struct dirent64_rec *d = (const struct dirent64_rec *)(buf + at);
			at += d->reclen;
			if (strcmp(d->name, ".") && strcmp(d->name, "..") && fn(fd, d->name, arg)) {
				close(fd);
				return 1;
			}
		}
	}
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}

#define PF_IO_WORKER 0x10 /* include/linux/sched.h, Linux 5.12+ */

bool mpk_os_is_io_thread(pid_t tid)
{
	char path[64], buf[512];
	unsigned long flags;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	/* The name may hold spaces and ')': the fields follow the last ')';
	 * flags is the 9th field (state, ppid, pgrp, session, tty, tpgid). */
	char *e = strrchr(buf, ')');
	if (!e || sscanf(e + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) != 1)
		return false;
	return flags & PF_IO_WORKER;
}
