/* SPDX-License-Identifier: MIT */
/*
 * mpk_lockdown(): freeze the process so that a closed domain stays closed
 * against system calls and stray code.  Steps, checks first so that a
 * failure changes nothing: the gadget scan (if asked), no tracer (dumpable
 * 0 meanwhile, so that none attaches after the check), no io_uring, the
 * domain ranges, the executable memory (lockdown_exec.c: refused if a
 * write could still change code; code of a file the process can write is
 * copied out of it, which changes no byte) and the filter program, the
 * Landlock ruleset (if asked);
 * then, the filter (every thread, TSYNC), SIGTRAP back to its default
 * action (unless it is mpkit's), MADV_DONTDUMP on all domain memory, mseal
 * (if asked), Landlock (if asked).  See docs/threat-model.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lockdown.h"
#include "../shared/procmaps.h"
#include "../shared/scan.h"

#define ALL_FLAGS (MPK_LOCK_ERRNO | MPK_LOCK_SEAL | MPK_LOCK_PROC_MEM | MPK_LOCK_NO_OPEN | \
		   MPK_LOCK_SCAN | MPK_LOCK_SCAN_REPORT | MPK_LOCK_FREEZE_KEYS)
#ifndef SYS_mseal
#define SYS_mseal 462
#endif

static int lock_flags = -1; /* under the core's lock */

/* The same, for memory added later (cover()): set under the window lock,
 * which mpk_lockdown() holds from the ranges to the filter, so that a
 * window is either in the filter or covered by one of its own. */
static int cover_flags = -1;

struct ranges {
	struct mpk_range r[MPK_LOCK_MAX_RANGES * 4];
	size_t n;
	bool overflow;
};

static void add_range(uintptr_t lo, uintptr_t hi, void *arg)
{
	struct ranges *rs = arg;
	if (rs->n == sizeof(rs->r) / sizeof(rs->r[0])) {
		rs->overflow = true;
		return;
	}
	rs->r[rs->n++] = (struct mpk_range){ .lo = lo, .hi = hi };
}

static int add_window_range(const struct mpk_range *g, void *arg)
{
	add_range(g->lo, g->hi, arg);
	return 0;
}

static int by_lo(const void *a, const void *b)
{
	const struct mpk_range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/*
 * Domain memory: the reserved windows whole (every region of every domain,
 * heap chunks, vaults and big blocks included, is carved from them, so
 * memory allocated after lockdown is covered too), the adopted ranges and
 * mapped files, and the ranges layers registered (the heap metadata area).
 * Only ranges that touch merge: a gap between two, however small, may be
 * the program's, and what the filter covers stays mpkit's for good (given
 * back, it is kept reserved: mpk__covered_unmap).  A window added after
 * lockdown gets a filter of its own (cover()).
 */
static int domain_ranges(struct ranges *rs)
{
	size_t n = 0;

	rs->n = 0;
	rs->overflow = false;
	mpk__ranges_each(add_window_range, rs);
	mpk__layer_ranges_each(add_range, rs);
	if (rs->overflow) {
		errno = E2BIG;
		return -1;
	}
	mpk__sort(rs->r, rs->n, sizeof(rs->r[0]), by_lo);
	for (size_t i = 0; i < rs->n; i++) {
		if (n && rs->r[i].lo <= rs->r[n - 1].hi) {
			if (rs->r[i].hi > rs->r[n - 1].hi)
				rs->r[n - 1].hi = rs->r[i].hi;
			continue;
		}
		rs->r[n++] = rs->r[i];
	}
	rs->n = n;
	if (n > MPK_LOCK_MAX_RANGES) {
		errno = E2BIG;
		return -1;
	}
	return 0;
}

static int report_gadget(const struct mpk_gadget *g, void *arg)
{
	(void)arg;
	if (g->cls == MPK_SITE_MPKIT)
		return 0;
	char from[48] = "";
	if (g->cls == MPK_SITE_GADGET && !g->unsure)
		snprintf(from, sizeof(from), " from 0x%llx", (unsigned long long)g->from);
	fprintf(stderr, "mpkit: lockdown: %s at 0x%llx in %s (%s+0x%llx): %s%s\n",
		mpk__gadget_kind_name(g->kind), (unsigned long long)g->addr, g->where,
		g->sym ? g->sym : "offset", (unsigned long long)(g->sym ? g->sym_off : g->file_off),
		g->cls == MPK_SITE_ROP ? "ROP only (the value comes from registers the attacker sets)"
		: g->unsure ? "a gadget (too many paths to follow)" : "a gadget (the code sets the value)",
		from);
	return 0;
}

/* The scan: -1/errno, else the number of gadgets (ROP-only sites and
 * mpkit's are not counted), each site outside mpkit reported. */
static long scan(void)
{
	struct mpk_scan_cb cb = { report_gadget, NULL, NULL };
	return mpk__scan_pid(0, &cb);
}

/* mpkit's gate code as page-aligned ranges for the filter (0 or 1). */
static size_t gate_range(struct mpk_range *g)
{
	size_t page = mpk_os_page_size();
	uintptr_t lo, hi;

	mpk_arch_gate_span(&lo, &hi);
	if (lo == hi)
		return 0;
	g->lo = lo & ~(page - 1);
	g->hi = (hi + page - 1) & ~(page - 1);
	return 1;
}

/* A handler for SIGTRAP that is not mpkit's goes: a trap on a WRPKRU,
 * from the trap flag that any code can set, must end the process. */
static void trap_default(void)
{
	struct sigaction cur;

	/* libc's answer: under a sanitizer that wraps handlers, the one
	 * mpkit installed, not the wrapper */
	if (!sigaction(SIGTRAP, NULL, &cur) && cur.sa_handler != SIG_DFL &&
	    !mpk_os_handler_is_ours(SIGTRAP, cur.sa_handler))
		mpk_os_signal_default(SIGTRAP);
}

static bool dontdump(const struct mpk_region_span *r, void *arg)
{
	(void)arg;
	mpk_os_madvise((void *)r->start, r->len, MADV_DONTDUMP);
	return false;
}

static void dontdump_range(uintptr_t lo, uintptr_t hi, void *arg)
{
	(void)arg;
	mpk_os_madvise((void *)lo, hi - lo, MADV_DONTDUMP);
}

/* mpk_alloc() memory of keyed domains: its protection never changes again
 * (rights are PKRU's), so it can be sealed; the domain keeps its key and
 * cannot be destroyed (the core marks it when this says it sealed).  Heap
 * and vault memory is not sealed: heaps give pages back (MADV_DONTNEED,
 * munmap), which a seal forbids. */
static bool seal(const struct mpk_region_span *r, void *arg)
{
	bool *have = arg;
	if (!*have || !r->sealable)
		return false;
	if (mpk_arch_syscall6(SYS_mseal, (long)r->start, (long)r->len, 0, 0, 0, 0) == -ENOSYS) {
		*have = false; /* before 6.10: the filter alone */
		return false;
	}
	return true;
}

#define IO_URING_FILE "anon_inode:[io_uring]"

/* Whether dir (a /proc directory) has an entry for which fn says yes.
 * Read without opendir() and stdio, which take memory from malloc():
 * mpkit's locks are held. */
static bool any_entry(const char *dir, bool (*fn)(int dirfd, const char *name, void *arg))
{
	return mpk_os_dir_each(dir, fn, NULL) > 0;
}

static bool fd_is_ring(int dirfd, const char *name, void *arg)
{
	char to[64];
	(void)arg;
	ssize_t n = readlinkat(dirfd, name, to, sizeof(to) - 1);
	return n == (ssize_t)strlen(IO_URING_FILE) && !memcmp(to, IO_URING_FILE, (size_t)n);
}

static bool task_is_io(int dirfd, const char *name, void *arg)
{
	(void)dirfd, (void)arg;
	return mpk_os_is_io_thread((pid_t)atoi(name));
}

/*
 * An io_uring instance of this process: a descriptor, a mapping of its
 * rings (the ring lives while mapped), or one of its kernel threads.  The
 * filter cannot stop it: an SQPOLL thread takes work from the shared ring
 * with no system call, and a registered buffer is copied through the
 * kernel's own mapping of its pinned pages, past keys and protections.
 */
static bool io_uring_alive(void)
{
	bool mapped = false;
	struct mpk_procmaps pm;
	struct mpk_procmaps_vma v;

	if (!mpk_procmaps_open(&pm, NULL, NULL)) {
		while (!mapped && mpk_procmaps_next(&pm, &v) > 0)
			mapped = strstr(v.path, IO_URING_FILE) != NULL;
		mpk_procmaps_close(&pm);
	}
	return mapped || any_entry("/proc/self/fd", fd_is_ring) ||
	       any_entry("/proc/self/task", task_is_io);
}

/* A thread's seccomp mode and number of filters (-1 where /proc does
 * not say, before Linux 5.9) from its status file; false if unreadable. */
static bool seccomp_of(const char *path, int *mode, int *filters)
{
	char buf[4096];
	const char *s;

	if (mpk_os_read_file(path, buf, sizeof(buf)) < 0)
		return false;
	*mode = *filters = -1;
	if ((s = strstr(buf, "\nSeccomp:")))
		sscanf(s, "\nSeccomp: %d", mode);
	if ((s = strstr(buf, "\nSeccomp_filters:")))
		sscanf(s, "\nSeccomp_filters: %d", filters);
	return *mode >= 0;
}

static int self_mode, self_filters;

/* A thread the filter could not reach: one in strict mode, or one with a
 * filter the caller has not (more of them, or any when it has none). */
static bool task_apart(int dirfd, const char *name, void *arg)
{
	char path[300];
	int mode, filters;

	(void)dirfd, (void)arg;
	snprintf(path, sizeof(path), "/proc/self/task/%s/status", name);
	if (!seccomp_of(path, &mode, &filters) || mode == 0)
		return false;
	return mode != 2 || self_mode != 2 || filters > self_filters;
}

/*
 * Whether the filter can go on every thread (TSYNC), and seccomp filters
 * exist at all, as far as can be told beforehand: install_filter() sets
 * no_new_privs first, which nothing clears, so the refusals it would meet
 * after that are looked for before it (a thread under filters other than
 * the caller's, but no more of them, still fails there, with no_new_privs
 * set: /proc shows counts, not filters).
 */
static int filter_fits(void)
{
	if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0) {
		errno = ENOTSUP;
		return -1;
	}
	if (seccomp_of("/proc/thread-self/status", &self_mode, &self_filters) &&
	    any_entry("/proc/self/task", task_apart)) {
		errno = EAGAIN;
		return -1;
	}
	return 0;
}

/* On every thread: 0, -1/errno, or the id of a thread that could not be
 * synchronised (one that installed a filter of its own). */
static long install_filter(struct sock_filter *f, size_t n)
{
	struct sock_fprog prog = { .len = (unsigned short)n, .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	long r = mpk_arch_syscall6(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC,
				   (long)&prog, 0, 0, 0);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/*
 * Filters only ever add restrictions, so a window that comes after
 * lockdown gets one of its own, stacked (from mpkit's site, every thread),
 * before any of it is used.  Its program is a few dozen instructions; the
 * kernel's limit on all of them (32768 for a thread) fails it with ENOMEM
 * past some hundreds of windows, and then the window is not used.  The
 * program is on the stack: callers hold different locks (window, heap
 * metadata, the core's).  mpk_lockdown() installs it as the core's cover
 * hook (core.h: mpk__cover) once its filter is in.
 */
static int cover(uintptr_t lo, uintptr_t hi)
{
	struct sock_filter prog[64];
	size_t n = sizeof(prog) / sizeof(prog[0]);

	if (mpk__bpf_build_range(prog, &n, lo, hi, (uintptr_t)mpk_arch_syscall_ip,
				 (unsigned)cover_flags))
		return -1;
	long r = install_filter(prog, n);
	if (r > 0)
		errno = EAGAIN;
	return r ? -1 : 0;
}

/* The other mpkits' locked words that peer_sites() set. */
static uint64_t *peer_locked[MPK_LOCK_MAX_SITES];
static size_t npeers;

/* Another mpkit in the process (a program linked with libmpkit.a under
 * the drop-in allocator's libmpkit.so): the filter trusts its site too,
 * where that is executable memory of now, and its locked (set here, before
 * the filter) sends its memory calls there.  Without that, its calls were
 * libc's, anyone's: a big block's move (MREMAP_FIXED) or a new domain's
 * pages (pkey_mprotect) were denied.  Appended to sites (*n in use); 0 or
 * -1/errno (E2BIG: more than MPK_LOCK_MAX_SITES - 1 others). */
static int peer_sites(uintptr_t *sites, size_t *n, const struct mpk_exec_ranges *ex)
{
	uintptr_t ips[MPK_LOCK_MAX_SITES - 1];
	uint64_t *locked[MPK_LOCK_MAX_SITES - 1];
	int got = mpk__registry_peers(ips, locked, MPK_LOCK_MAX_SITES - 1);

	npeers = 0;
	for (int i = 0; i < got; i++)
		for (size_t j = 0; j < ex->nx; j++)
			if (ips[i] > ex->x[j].lo && ips[i] <= ex->x[j].hi) {
				sites[(*n)++] = ips[i];
				peer_locked[npeers++] = locked[i];
				__atomic_store_n(locked[i], 1, __ATOMIC_RELEASE);
				break;
			}
	return got < 0 ? -1 : 0;
}

/* The lockdown failed after peer_sites(): the others back to libc. */
static void peers_unlock(void)
{
	for (size_t i = 0; i < npeers; i++)
		__atomic_store_n(peer_locked[i], 0, __ATOMIC_RELEASE);
	npeers = 0;
}

MPK_EXPORT int mpk_lockdown(unsigned flags)
{
	static struct ranges rs;
	static struct mpk_exec_ranges ex;
	static struct sock_filter prog[MPK_BPF_MAX];
	uintptr_t sites[MPK_LOCK_MAX_SITES] = { (uintptr_t)mpk_arch_syscall_ip };
	struct mpk_range gate[1];
	size_t n = MPK_BPF_MAX;
	int ruleset = -1, rc = -1;

	if (mpk__ensure_init())
		return -1;
	if (flags & ~ALL_FLAGS) {
		errno = EINVAL;
		return -1;
	}
#if !defined(__x86_64__)
	errno = ENOTSUP;
	return -1;
#endif
	mpk__core_lock();
	bool done = lock_flags >= 0;
	mpk__core_unlock();
	if (done) {
		errno = EALREADY;
		return -1;
	}
	/* Before mpkit's locks: the scan reads files and allocates. */
	if (flags & (MPK_LOCK_SCAN | MPK_LOCK_SCAN_REPORT)) {
		long gadgets = scan();
		if (gadgets < 0)
			return -1;
		if (gadgets && (flags & MPK_LOCK_SCAN)) {
			errno = EPERM;
			return -1;
		}
	}
	/* Not dumpable from here: no tracer attaches after the check below
	 * (but root); given back if the lockdown fails. */
	int dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	unsigned held = mpk__layer_ranges_lock(); /* heap areas stand still */
	mpk__core_lock();
	if (lock_flags >= 0) {
		errno = EALREADY;
		goto out;
	}
	if (mpk_os_tracer() > 0 || io_uring_alive()) {
		errno = EBUSY;
		goto out;
	}
	if (filter_fits())
		goto out;
	if (mpk_os_sigaction_ready())
		goto out;
	if ((flags & MPK_LOCK_PROC_MEM) && (ruleset = mpk__landlock_proc_mem_ruleset()) < 0)
		goto out;
	mpk__window_lock(); /* no window comes meanwhile */
	size_t nsites = 1;
	if (domain_ranges(&rs) || mpk__exec_ranges(&ex, rs.r, rs.n, flags) ||
	    peer_sites(sites, &nsites, &ex) ||
	    mpk__bpf_build(prog, &n, rs.r, rs.n, gate, gate_range(gate), &ex, sites, nsites, flags)) {
		peers_unlock();
		mpk__window_unlock();
		goto out;
	}

	__atomic_store_n(&mpk_os_locked, true, __ATOMIC_RELEASE);
	long r = install_filter(prog, n);
	if (r) {
		int err = r > 0 ? EAGAIN : errno == EINVAL ? ENOTSUP : errno;
		__atomic_store_n(&mpk_os_locked, false, __ATOMIC_RELEASE);
		peers_unlock();
		mpk__window_unlock();
		errno = err;
		goto out;
	}
	cover_flags = (int)flags;
	mpk__cover_hook_set(cover);
	mpk__window_unlock();
	trap_default();
	mpk__region_spans_each(dontdump, NULL);
	mpk__layer_ranges_each(dontdump_range, NULL);
	if (flags & MPK_LOCK_SEAL) {
		bool have = true;
		mpk__region_spans_each(seal, &have);
	}
	if (ruleset >= 0)
		mpk__landlock_apply(ruleset); /* cannot fail once the ruleset is built */
	lock_flags = (int)flags;
	rc = 0;
out:
	if (ruleset >= 0)
		close(ruleset);
	if (rc && dumpable == 1) /* 2 (setuid, suid_dumpable 2) cannot be set back */
		prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	mpk__core_unlock();
	mpk__layer_ranges_unlock(held);
	return rc;
}

MPK_EXPORT int mpk_lockdown_flags(void)
{
	mpk__core_lock();
	int f = lock_flags;
	mpk__core_unlock();
	if (f < 0)
		errno = ENOENT;
	return f;
}
