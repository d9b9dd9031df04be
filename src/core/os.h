/* SPDX-License-Identifier: MIT */
/*
 * The Linux layer: raw system calls (so mpkit builds with a libc that lacks
 * the pkey wrappers), with the counters tests read, and /proc parsing.
 */
#ifndef MPK_OS_H
#define MPK_OS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/types.h>

int mpk_os_pkey_alloc(unsigned flags, unsigned rights);
int mpk_os_pkey_free(int key);
int mpk_os_pkey_mprotect(void *addr, size_t len, int prot, int key);
int mpk_os_mprotect(void *addr, size_t len, int prot);
void *mpk_os_map(size_t len, int prot);
/* Private anonymous mmap() at addr with extra flags (MAP_FIXED...): the
 * window's carving, which after mpk_lockdown() must come from mpkit's
 * trusted system-call site.  NULL/errno. */
void *mpk_os_map_at(void *addr, size_t len, int prot, int flags);
/* Any mmap() (a file, MAP_SHARED), the same way.  NULL/errno. */
void *mpk_os_map_fd(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int mpk_os_unmap(void *addr, size_t len);
int mpk_os_madvise(void *addr, size_t len, int advice);
/* Set by mpk_lockdown(): memory calls go through mpkit's trusted site. */
extern bool mpk_os_locked;
/* The locked word of this mpkit's registry (registry.c), which another
 * mpkit's lockdown in the process sets; NULL until there is one. */
extern uint64_t *mpk_os_peer_lock;
/* Under a lockdown: this mpkit's, or another's that trusts this one's
 * site.  Memory calls then take the site. */
static inline bool mpk_os_is_locked(void)
{
	uint64_t *peer = __atomic_load_n(&mpk_os_peer_lock, __ATOMIC_ACQUIRE);

	return __atomic_load_n(&mpk_os_locked, __ATOMIC_ACQUIRE) ||
	       (peer && __atomic_load_n(peer, __ATOMIC_ACQUIRE));
}
/* mpk_os_mprotect()'s count and fault injection (os.c). */
extern unsigned long long mpk_os_mprotect_calls;
extern int mpk_os_fail_in[2];
/*
 * mpk_os_mprotect(), inline: libc's mprotect() straight from the caller's
 * frame, unless under a lockdown or with a failure injected (then the call
 * above).  For the soft backend's rights changes: where the kernel refills
 * the return stack buffer on the way back to user space (spectre_v2's
 * "RSB filling", as on the 2-CPU AMD EPYC guest of docs/heaps.md), every
 * return past the system call is mispredicted, about 8 ns each there;
 * libsodium's pair has two or three.
 */
static inline int mpk_os_mprotect_inline(void *addr, size_t len, int prot)
{
	int failing = __atomic_load_n(&mpk_os_fail_in[0] /* MPK_OS_FAIL_MPROTECT */, __ATOMIC_ACQUIRE);

	if (__builtin_expect(failing != 0 || mpk_os_is_locked(), 0))
		return mpk_os_mprotect(addr, len, prot);
	__atomic_add_fetch(&mpk_os_mprotect_calls, 1, __ATOMIC_RELAXED);
	return mprotect(addr, len, prot);
}
/* mremap(MREMAP_MAYMOVE | MREMAP_FIXED) onto to: to, or NULL/errno. */
void *mpk_os_remap_fixed(void *addr, size_t old_len, size_t new_len, void *to);
/* Raw mlock()/munlock(): sanitizers make the libc ones no-ops. */
int mpk_os_mlock(const void *addr, size_t len);
int mpk_os_munlock(const void *addr, size_t len);
pid_t mpk_os_gettid(void);
int mpk_os_tgkill(pid_t tgid, pid_t tid, int sig);
/* Private futex: sleep while *word == val, at most timeout_ns (0 or -1 and
 * errno, EAGAIN/ETIMEDOUT/EINTR included); wake one sleeper.  Both are
 * async-signal-safe. */
int mpk_os_futex_wait(int *word, int val, long timeout_ns);
int mpk_os_futex_wake(int *word);
size_t mpk_os_page_size(void);

/* Give [addr, addr+len) the name "mpk:NAME" in /proc/PID/maps; best effort
 * (Linux 5.17+ with CONFIG_ANON_VMA_NAME). */
void mpk_os_name_region(void *addr, size_t len, const char *name);
int mpk_os_region_names(int *err);

/* Whether [addr, addr+len) is wholly covered by private anonymous mappings
 * with exactly PROT_READ|PROT_WRITE.  -1/errno if /proc cannot be read. */
int mpk_os_range_is_private_anon_rw(const void *addr, size_t len);

/* The protection of [addr, addr+len) if wholly mapped with one protection;
 * -1 with ENOMEM (a hole) or EINVAL (mixed), or the error reading /proc. */
int mpk_os_range_prot(const void *addr, size_t len);

/* Whether thread tid of this process is one of io_uring's kernel threads
 * (an io-wq worker, iou-wrk-*, or an SQPOLL thread, iou-sqp-*): the
 * kernel's PF_IO_WORKER flag in /proc/self/task/TID/stat, not the name,
 * which any thread can take.  They run no user code and never answer a
 * signal.  False if /proc cannot be read. */
bool mpk_os_is_io_thread(pid_t tid);

/*
 * /proc without stdio or opendir(), which allocate with the process's
 * malloc (mpkit's heap, maybe), and mpkit reads /proc under its locks.
 * _read_file: up to size - 1 bytes of path into buf, NUL-terminated; the
 * length, or -1/errno.  _dir_each: fn(dirfd, name, arg) for every entry of
 * path but "." and "..", until fn returns true (then 1); 0 at the end,
 * -1/errno if path cannot be read.
 */
ssize_t mpk_os_read_file(const char *path, char *buf, size_t size);
int mpk_os_dir_each(const char *path, bool (*fn)(int dirfd, const char *name, void *arg), void *arg);

/* The protection key of the mapping holding addr (smaps), -1/ENOENT. */
int mpk_os_vma_pkey(const void *addr);

/* mprotect()/pkey_mprotect() calls made so far. */
unsigned long long mpk_os_mprotect_count(void);

/*
 * Signal actions across the lockdown (os_signal.c).  The signals a trap or
 * a fault raises, whose actions the lockdown freezes: a handler could move
 * a thread past a WRPKRU's check (docs/threat-model.md).  mpkit installs
 * its handlers with mpk_os_sigaction(): libc's sigaction() before the
 * lockdown, its own system-call site after (mpk_os_sigaction_ready() has
 * learnt libc's sigreturn trampoline then, before the filter).
 */
#define MPK_OS_FROZEN_SIGNALS { SIGILL, SIGTRAP, SIGBUS, SIGFPE, SIGSEGV }
struct sigaction;
int mpk_os_sigaction_ready(void);
int mpk_os_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
/* Whether handler is what mpkit last installed for sig. */
bool mpk_os_handler_is_ours(int sig, void (*handler)(int));
/* SIG_DFL for sig, from mpkit's site. */
int mpk_os_signal_default(int sig);
/* The process's tracer (TracerPid), 0 for none, -1/errno if unknown. */
pid_t mpk_os_tracer(void);

#endif
