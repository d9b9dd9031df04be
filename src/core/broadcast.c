/* SPDX-License-Identifier: MIT */
/*
 * Rewriting the rights register of every thread.  PKRU is per thread and no
 * system call sets another thread's, but a signal handler can: the kernel
 * saves the interrupted PKRU in the signal frame's XSAVE image and sigreturn
 * loads it back.  So: signal each thread, edit the image, wait for every
 * acknowledgement.
 *
 * Who: the threads in the registry (thread.c), then, only when the kernel
 * counts more threads than the registry holds (one stat() of
 * /proc/self/task, whose link count is 2 + threads), a scan of that
 * directory for the others; each thread that answers joins the registry.
 * Threads created meanwhile inherit PKRU from a creator already done, or
 * are found by the next pass.  Acknowledgements count down a futex word the
 * caller sleeps on: no polling.
 *
 * Whom not: a thread that already holds the target rights in every frame
 * it has.  Each registered thread publishes, in its entry, the AND and the
 * OR of every value its register may have (arch.h: the fast path notes
 * each write, a handler that edits the thread resets them to the frames it
 * edited) and a busy flag around each rights change.  The caller has
 * already unpublished or changed what it revokes; membarrier() then orders
 * that against every running thread, so a thread seen not busy has either
 * noted its last write or will load the key afresh.  Skipped: entries
 * trusted (pub_ok), not busy, whose values all give each key in question
 * the target rights (mpk_arch_rights_match).  Signalled: everyone else, the
 * threads a scan finds (they never called mpkit), and everyone when
 * membarrier() is unavailable or the request is per thread (fn).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "os.h"
#include "testing.h"
#include "thread.h"


#define MAX_WAIT_NS (5ull * 1000 * 1000 * 1000)
/* A thread may block every signal for a moment (glibc does while a new
 * thread starts, and around some of its own work): only one that keeps the
 * signal blocked and pending this long cannot answer. */
#define BLOCKED_GRACE_NS (100ull * 1000 * 1000)

enum { SENT, DONE, FAILED /* no XSAVE image */, GONE };

/* Signal frames a thread may be nested in that a broadcast edits (some
 * perhaps stale: arch.h). */
#define FRAMES_MAX 16

struct target {
	pid_t tid;
	int state;     /* SENT until answered; atomic */
	int nold;
	/* Each frame's register before the edit, outermost (the thread's own
	 * code) first, for an undo. */
	mpk_reg_t old[FRAMES_MAX];
	struct mpk_thread *ent; /* its registry entry, NULL if found by a scan */
};

static pthread_mutex_t bc_lock = PTHREAD_MUTEX_INITIALIZER;
/* Targets of the current broadcast.  The array is replaced, never freed,
 * when it grows: a handler that runs late may still hold the old one. */
static struct {
	mpk_reg_t clear, set;
	mpk_reg_t (*fn)(const void *arg); /* per-thread set, if not NULL */
	const void *arg;
	bool undo; /* put back each target's old bits where they are still set */
	mpk_reg_t seen_and, seen_or;      /* registers before the edit */
	bool skip; /* threads that hold the target already are left alone */
	struct target *t;
	size_t n, cap;
	size_t n_fill; /* targets written; req.n of them published */
	int pending; /* targets of this round yet to answer; a futex word */
} req;
static pid_t pid; /* getpid() is a system call; renewed in a child */
static bool stub;  /* benchmarks: no frame edit, any backend */
static bool noskip; /* tests and benchmarks: signal every thread */
/* Its own cost, for stats, tests and benchmarks: broadcasts made, signals
 * sent, system calls made by the broadcasting thread, /proc scans, and
 * threads left alone because they held the target.  Atomic, relaxed. */
static struct {
	uint64_t broadcasts, signals, syscalls, scans, skipped;
} count;

void mpk__broadcast_stub(int on)
{
	stub = on;
}

void mpk__broadcast_noskip(int on)
{
	noskip = on;
}

uint64_t mpk__broadcast_skipped(void)
{
	return __atomic_load_n(&count.skipped, __ATOMIC_RELAXED);
}

uint64_t mpk__broadcast_count(void)
{
	return __atomic_load_n(&count.broadcasts, __ATOMIC_RELAXED);
}

void mpk__broadcast_counters(uint64_t c[3])
{
	c[0] = __atomic_load_n(&count.signals, __ATOMIC_RELAXED);
	c[1] = __atomic_load_n(&count.syscalls, __ATOMIC_RELAXED);
	c[2] = __atomic_load_n(&count.scans, __ATOMIC_RELAXED);
}

/* Publish the frames' new registers as all the thread now holds. */
static void pub_reset(const mpk_reg_t *reg, int n)
{
	struct mpk_thread *e = mpk__self;
	mpk_reg_t a = ~(mpk_reg_t)0, o = 0;

	if (!e)
		return;
	for (int j = 0; j < n; j++)
		a &= reg[j], o |= reg[j];
	__atomic_store_n(&e->pub.and_, a, __ATOMIC_RELAXED);
	__atomic_store_n(&e->pub.or_, o, __ATOMIC_RELAXED);
	__atomic_store_n(&e->pub_ok, 1, __ATOMIC_RELEASE);
}

static void count_syscalls(int n)
{
	__atomic_add_fetch(&count.syscalls, (uint64_t)n, __ATOMIC_RELAXED);
}

/* Of those, the ones a slow answer cost (a wait that timed out, and the
 * look at the late threads after it): how many depends on scheduling, not
 * on the protocol, so tests of the count leave them out. */
static uint64_t bc_slow;

static void count_slow(int n)
{
	count_syscalls(n);
	__atomic_add_fetch(&bc_slow, (uint64_t)n, __ATOMIC_RELAXED);
}

uint64_t mpk__broadcast_slow_syscalls(void)
{
	return __atomic_load_n(&bc_slow, __ATOMIC_RELAXED);
}

/* A target leaves the round: the last one wakes the caller. */
static void answered(struct target *t, int state)
{
	int sent = SENT;
	if (!__atomic_compare_exchange_n(&t->state, &sent, state, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return;
	if (__atomic_sub_fetch(&req.pending, 1, __ATOMIC_ACQ_REL) == 0)
		mpk_os_futex_wake(&req.pending);
}

/*
 * Edit every frame the thread is nested in, not only the innermost: a
 * thread caught inside a signal handler gets the handler's register from
 * the innermost frame and its own code's from the outermost, at the
 * handler's sigreturn.  What the thread holds is the outermost one; when
 * frames past the outermost certain one may be stale (arch.h), any of
 * them, and all count in what is seen.
 */
static int edit(struct target *t, void *uc)
{
	void *fr[FRAMES_MAX];
	mpk_reg_t reg[FRAMES_MAX];
	int own, nf = mpk_arch_frame_chain(uc, fr, FRAMES_MAX, &own);

	for (int j = 0; j < nf; j++)
		if (!mpk_arch_frame_reg_get(fr[j], &reg[j]))
			return FAILED;
	mpk_reg_t bits = req.undo ? 0 : req.fn ? req.fn(req.arg) & req.clear : req.set;
	mpk_reg_t now[FRAMES_MAX];
	for (int j = 0; j < nf; j++) {
		int k = nf - 1 - j; /* from the outermost */
		mpk_reg_t want;
		if (req.undo) /* unless the thread has set other bits since */
			want = (reg[j] & req.clear) == req.set && k < t->nold
				       ? (reg[j] & ~req.clear) | (t->old[k] & req.clear)
				       : reg[j];
		else
			want = (reg[j] & ~req.clear) | bits;
		mpk_arch_frame_reg_set(fr[j], want); /* cannot fail: get did not */
		now[j] = want;
		/* A rights change cut short here must not write back what
		 * it read before this edit. */
		mpk_arch_frame_restart(fr[j]);
		if (!req.undo)
			t->old[k] = reg[j];
	}
	pub_reset(now, nf);
	if (!req.undo) {
		t->nold = nf;
		for (int j = own; j < nf; j++) {
			__atomic_and_fetch(&req.seen_and, reg[j], __ATOMIC_RELAXED);
			__atomic_or_fetch(&req.seen_or, reg[j], __ATOMIC_RELAXED);
		}
	}
	return DONE;
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	int saved = errno;
	mpk__thread_register_signal(); /* the next broadcast finds it listed */
	pid_t self = mpk__thread_self_tid();
	if (!self)
		self = mpk_os_gettid();
	struct target *t = __atomic_load_n(&req.t, __ATOMIC_ACQUIRE);
	size_t n = __atomic_load_n(&req.n, __ATOMIC_ACQUIRE);
	for (size_t i = 0; t && i < n; i++) {
		if (t[i].tid != self || __atomic_load_n(&t[i].state, __ATOMIC_ACQUIRE) != SENT)
			continue;
		answered(&t[i], stub ? DONE : edit(&t[i], uc));
	}
	errno = saved;
}

static int install_rc = -1;

static void install_once(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	install_rc = sigaction(MPK_SIGNAL, &sa, NULL);
}

static int install(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, install_once);
	return install_rc;
}

bool mpk__pub_init(struct mpk_thread *t)
{
	void *fr[FRAMES_MAX];
	mpk_reg_t reg;

	/* Empty first: a broadcast handler may reset it meanwhile, and what
	 * is read below is only added to what that handler left. */
	__atomic_store_n(&t->pub.and_, ~(mpk_reg_t)0, __ATOMIC_RELAXED);
	__atomic_store_n(&t->pub.or_, 0, __ATOMIC_RELAXED);
	if (install())
		return false; /* no restorer to find the frames by */
	mpk_reg_t a = mpk_arch_reg_read(), o = a;
	int own, nf = mpk_arch_self_frames(MPK_SIGNAL, fr, FRAMES_MAX, &own);
	for (int j = 0; j < nf; j++) {
		if (!mpk_arch_frame_reg_get(fr[j], &reg))
			return false;
		a &= reg, o |= reg;
	}
	__atomic_and_fetch(&t->pub.and_, a, __ATOMIC_RELAXED);
	__atomic_or_fetch(&t->pub.or_, o, __ATOMIC_RELAXED);
	__atomic_store_n(&t->pub_ok, 1, __ATOMIC_RELEASE);
	return true;
}

mpk_reg_t mpk__threads_open(void)
{
	mpk_reg_t open = 0;

	for (struct mpk_thread *e = mpk__thread_next(NULL); e; e = mpk__thread_next(e))
		open |= __atomic_load_n(&e->pub_ok, __ATOMIC_ACQUIRE)
				? ~__atomic_load_n(&e->pub.and_, __ATOMIC_RELAXED)
				: ~(mpk_reg_t)0;
	return open & 0x55555555u;
}

/* reg is all the calling thread holds: its history starts again there. */
static void pub_alone(mpk_reg_t reg)
{
	struct mpk_thread *e = mpk__self;

	if (e) {
		__atomic_store_n(&e->pub.and_, reg, __ATOMIC_RELAXED);
		__atomic_store_n(&e->pub.or_, reg, __ATOMIC_RELAXED);
	}
}

/* Whether the calling thread blocks no signal: then it runs no handler but
 * one installed with SA_NODEFER, whose frame only a scan finds (frames.c). */
static bool blocks_none(void)
{
	sigset_t m;
	return !pthread_sigmask(SIG_BLOCK, NULL, &m) && sigisemptyset(&m);
}

/*
 * After a write outside the fast path, under mpk_g.lock (no broadcast
 * runs, none of its handlers either): a thread that blocks no signal and
 * has no handler frame on its stack runs no handler, so reg is all it
 * holds and its history starts again there.  Otherwise reg joins the
 * history.
 */
void mpk__pub_wrote(mpk_reg_t reg)
{
	void *fr[1];
	int own;

	if (!mpk__self)
		return;
	if (blocks_none() && !mpk_arch_self_frames(MPK_SIGNAL, fr, 1, &own))
		pub_alone(reg);
	else
		mpk__pub_note(reg);
}

/*
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED): every running thread of
 * the process passes a full barrier before it returns (a sleeping one did
 * at its context switch).  Registered once; false when the kernel has no
 * such command (then every thread is signalled).
 */
#define MB_QUERY 0
#define MB_PRIVATE_EXPEDITED (1 << 3)
#define MB_REGISTER_PRIVATE_EXPEDITED (1 << 4)
static int mb_state; /* 0 unknown, 1 usable, -1 not; set at init */

void mpk__broadcast_setup(void)
{
	long cmds = mpk_arch_syscall6(SYS_membarrier, MB_QUERY, 0, 0, 0, 0, 0);
	mb_state = cmds >= 0 && (cmds & MB_PRIVATE_EXPEDITED) &&
			   !mpk_arch_syscall6(SYS_membarrier, MB_REGISTER_PRIVATE_EXPEDITED, 0, 0, 0,
					      0, 0)
		   ? 1 : -1;
}

static bool membarrier_all(void)
{
	if (mb_state <= 0 || noskip)
		return false;
	count_syscalls(1);
	return mpk_arch_syscall6(SYS_membarrier, MB_PRIVATE_EXPEDITED, 0, 0, 0, 0, 0) == 0;
}

static bool known(const struct target *t, size_t n, pid_t tid)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].tid == tid)
			return true;
	return false;
}

static bool thread_alive(pid_t tid)
{
	count_slow(1);
	return mpk_os_tgkill(pid, tid, 0) == 0 || errno != ESRCH;
}

/*
 * Whether tid blocks the signal while it is still pending: then it cannot
 * answer.  Blocked alone is not enough: a thread running the handler has
 * it blocked too (the handler blocks every signal), but has it no longer
 * pending, and is about to answer.  Only asked of a thread slow to answer.
 */
static bool thread_blocks(pid_t tid)
{
	char path[64], buf[4096];
	const char *s;
	unsigned long long blocked = 0, pending = 0;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	count_slow(3);
	if (mpk_os_read_file(path, buf, sizeof(buf)) < 0)
		return false;
	if ((s = strstr(buf, "\nSigPnd:")))
		pending = strtoull(s + 8, NULL, 16);
	if ((s = strstr(buf, "\nSigBlk:")))
		blocked = strtoull(s + 8, NULL, 16);
	return (blocked & pending) >> (MPK_SIGNAL - 1) & 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts); /* vDSO: no system call */
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Threads the kernel counts in this process, -1 without /proc. */
static int kernel_threads(void)
{
	struct stat st;

	count_syscalls(1);
	if (stat("/proc/self/task", &st) || st.st_nlink < 3)
		return -1;
	return (int)st.st_nlink - 2;
}

/* Room for `more` targets beyond req.n; only between rounds, when no
 * handler writes into the array. */
static int reserve(size_t more)
{
	if (req.n + more <= req.cap)
		return 0;
	size_t cap = req.cap ? req.cap : 64;
	while (cap < req.n + more)
		cap *= 2;
	struct target *t = mpk__ialloc_array(cap, sizeof(*t));
	if (!t)
		return -1;
	if (req.t)
		memcpy(t, req.t, req.n * sizeof(*t));
	__atomic_store_n(&req.t, t, __ATOMIC_RELEASE);
	req.cap = cap;
	return 0;
}

/* Signal req.t[from..end) (already filled in, SENT), publishing them
 * first so that any handler finds its target. */
static void send_round(size_t from, size_t end)
{
	__atomic_store_n(&req.pending, (int)(end - from), __ATOMIC_RELEASE);
	__atomic_store_n(&req.n, end, __ATOMIC_RELEASE);
	for (size_t i = from; i < end; i++) {
		struct target *t = &req.t[i];
		count_syscalls(1);
		if (mpk_os_tgkill(pid, t->tid, MPK_SIGNAL) == 0) {
			__atomic_add_fetch(&count.signals, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (t->ent) /* it died without its key destructor */
			mpk__thread_gone(t->ent, t->tid);
		answered(t, GONE);
	}
}

/* Wait for req.t[from..n): 0 when all answered or died, -1 when one
 * cannot (then the late ones are let go: a late handler edits nothing). */
static int wait_round(size_t from)
{
	uint64_t start = now_ns(), blocked_since[64] = { 0 };
	size_t n = req.n;
	int p, rc = 0;

	while (!rc && (p = __atomic_load_n(&req.pending, __ATOMIC_ACQUIRE)) > 0) {
		/* 10 ms before looking at /proc: an emulated CPU can take
		 * milliseconds to deliver a round of signals. */
		if (mpk_os_futex_wait(&req.pending, p, 10 * 1000 * 1000) == 0 || errno != ETIMEDOUT) {
			count_syscalls(1);
			continue;
		}
		count_slow(1); /* a wait that timed out: the answer is slow */
		/* Slow to answer: dead, blocking the signal, or stuck. */
		uint64_t now = now_ns();
		for (size_t i = from; i < n; i++) {
			struct target *t = &req.t[i];
			uint64_t *since = &blocked_since[(i - from) % 64];
			if (__atomic_load_n(&t->state, __ATOMIC_ACQUIRE) != SENT)
				continue;
			if (!thread_alive(t->tid)) {
				answered(t, GONE);
				continue;
			}
			if (!thread_blocks(t->tid))
				*since = 0;
			else if (!*since)
				*since = now;
			if ((*since && now - *since > BLOCKED_GRACE_NS) || now - start > MAX_WAIT_NS)
				rc = -1;
		}
	}
	for (size_t i = from; i < n; i++) {
		if (rc)
			answered(&req.t[i], GONE);
		if (__atomic_load_n(&req.t[i].state, __ATOMIC_ACQUIRE) == FAILED)
			rc = -1;
	}
	return rc;
}

static void add_target(pid_t tid, struct mpk_thread *ent)
{
	req.t[req.n_fill++] = (struct target){ .tid = tid, .state = SENT, .ent = ent };
}

/*
 * Whether e's thread holds the target in every frame already (see the top
 * of the file); then its registers count as seen.  A thread busy in a
 * rights change is given a moment to finish it: it runs, it does not wait.
 */
static bool holds_target(struct mpk_thread *e)
{
	if (!req.skip || !__atomic_load_n(&e->pub_ok, __ATOMIC_ACQUIRE))
		return false;
	for (int i = 0; __atomic_load_n(&e->pub.busy, __ATOMIC_ACQUIRE); i++) {
		if (i == 200)
			return false;
		__builtin_ia32_pause();
	}
	mpk_reg_t a = __atomic_load_n(&e->pub.and_, __ATOMIC_ACQUIRE);
	mpk_reg_t o = __atomic_load_n(&e->pub.or_, __ATOMIC_ACQUIRE);
	if (!__atomic_load_n(&e->pub_ok, __ATOMIC_ACQUIRE) ||
	    !mpk_arch_rights_match(a, o, req.clear, req.set))
		return false;
	__atomic_and_fetch(&req.seen_and, a, __ATOMIC_RELAXED);
	__atomic_or_fetch(&req.seen_or, o, __ATOMIC_RELAXED);
	__atomic_add_fetch(&count.skipped, 1, __ATOMIC_RELAXED);
	return true;
}

/* Registered threads not yet targeted by broadcast number gen (after a
 * scan, threads it found register as they answer: not twice). */
static void collect_registry(pid_t self, uint64_t gen, bool scanned)
{
	for (struct mpk_thread *e = mpk__thread_next(NULL); e && req.n_fill < req.cap;
	     e = mpk__thread_next(e)) {
		pid_t tid = __atomic_load_n(&e->tid, __ATOMIC_ACQUIRE);
		if (!tid || tid == self || (e->bc_gen == gen && e->bc_tid == tid))
			continue;
		e->bc_gen = gen;
		e->bc_tid = tid;
		if ((!scanned || !known(req.t, req.n_fill, tid)) && !holds_target(e))
			add_target(tid, e);
	}
}

/* io_uring kernel threads the latest scan passed over (0 when the kernel
 * counted no thread beyond the registry). */
static int io_seen;

int mpk__broadcast_io_threads(void)
{
	return __atomic_load_n(&io_seen, __ATOMIC_RELAXED);
}

/* Threads in /proc/self/task not yet targeted: the fallback.  io_uring's
 * kernel threads are passed over: they run no user code, so no rights of
 * theirs can be edited, and they never answer (every signal blocked). */
struct scan {
	pid_t self;
	int io;
};

static bool scan_one(int dirfd, const char *name, void *arg)
{
	struct scan *s = arg;
	pid_t tid = (pid_t)atoi(name);

	(void)dirfd;
	if (tid <= 0 || tid == s->self || known(req.t, req.n_fill, tid))
		return false;
	count_syscalls(3); /* open, read, close of its stat */
	if (mpk_os_is_io_thread(tid))
		s->io++;
	else
		add_target(tid, NULL);
	return req.n_fill >= req.cap;
}

static int collect_scan(pid_t self, int tasks)
{
	size_t from = req.n_fill;
	struct scan s = { self, 0 };

	__atomic_add_fetch(&count.scans, 1, __ATOMIC_RELAXED);
	count_syscalls(4); /* open, getdents (twice for a short list), close */
	if (reserve((size_t)tasks + 8) || mpk__threads_reserve((size_t)tasks + 8) ||
	    mpk_os_dir_each("/proc/self/task", scan_one, &s) < 0)
		return -1;
	__atomic_store_n(&io_seen, s.io, __ATOMIC_RELAXED);
	return (int)(req.n_fill - from);
}

/*
 * Rounds until every thread is reached: the registry first (again after
 * each round, for threads that registered meanwhile), then, if the kernel
 * counts more threads than the registry holds, a scan.
 */
static int reach_all(pid_t self)
{
	static uint64_t gen;
	bool scanned = false;

	gen++;
	for (;;) {
		size_t from = req.n;
		if (reserve((size_t)mpk__threads_claimed() + 8))
			return -1;
		collect_registry(self, gen, scanned);
		if (req.n_fill == from) {
			int tasks = kernel_threads();
			if (tasks < 0 || tasks <= mpk__threads_claimed()) {
				if (!scanned)
					__atomic_store_n(&io_seen, 0, __ATOMIC_RELAXED);
				return 0; /* every thread the kernel counts is listed */
			}
			int added = collect_scan(self, tasks);
			if (added <= 0)
				return added;
			scanned = true;
		}
		send_round(from, req.n_fill);
		if (wait_round(from))
			return -1;
	}
}

/*
 * After a failed broadcast: signal again the threads that were reached, to
 * put their old bits back (each checks it still holds the new ones: a
 * thread that set its own rights since keeps them).  Best effort: a thread
 * that cannot be reached now keeps the new bits.
 */
static void undo(mpk_reg_t mine)
{
	size_t n = 0;

	for (size_t i = 0; i < req.n; i++)
		if (__atomic_load_n(&req.t[i].state, __ATOMIC_ACQUIRE) == DONE)
			req.t[n] = req.t[i], req.t[n++].state = SENT;
	__atomic_store_n(&req.n, 0, __ATOMIC_RELEASE);
	req.undo = true;
	req.n_fill = n;
	send_round(0, n);
	wait_round(0);
	req.undo = false;
	if ((mpk_arch_reg_read() & req.clear) == req.set) {
		mpk_reg_t r = mpk_arch_reg_update(req.clear, mine & req.clear);
		mpk__pub_note((r & ~req.clear) | (mine & req.clear));
	}
}

/*
 * The caller too may be inside a signal handler (mpkit called from one):
 * edit the frames its handlers return to, as edit() does for the others.
 * Sets *and_ and *or_ to the registers its own code may hold, before the
 * edit: mine when it runs no handler, else the outermost frame's, or each
 * of the candidates when some frames may be stale (as edit()).  Returns
 * how many frames it found.
 */
static int edit_self(mpk_reg_t clear, mpk_reg_t bits, mpk_reg_t mine, mpk_reg_t *and_,
		     mpk_reg_t *or_)
{
	void *fr[FRAMES_MAX];
	int own, nf = mpk_arch_self_frames(MPK_SIGNAL, fr, FRAMES_MAX, &own);
	mpk_reg_t reg, a = mine, o = mine;
	bool any = own < 0; /* a and o hold a candidate: mine is one */

	for (int j = 0; j < nf; j++)
		if (mpk_arch_frame_reg_get(fr[j], &reg)) {
			mpk_arch_frame_reg_set(fr[j], (reg & ~clear) | bits);
			mpk__pub_note((reg & ~clear) | bits);
			mpk_arch_frame_restart(fr[j]);
			if (j >= own) {
				a = any ? a & reg : reg;
				o = any ? o | reg : reg;
				any = true;
			}
		}
	*and_ = a;
	*or_ = o;
	return nf;
}

int mpk__broadcast(mpk_reg_t clear, mpk_reg_t set)
{
	struct mpk_bcast b = { .clear = clear, .set = set };
	return mpk__broadcast_ex(&b);
}

int mpk__broadcast_ex(struct mpk_bcast *b)
{
	int rc;

	b->seen_and = ~(mpk_reg_t)0;
	b->seen_or = 0;
	if (mpk__backend() != MPK_BACKEND_HW && !stub)
		return 0; /* no rights register to rewrite */
	mpk__thread_register();
	pthread_mutex_lock(&bc_lock);
	if (install() || mpk__threads_reserve(8)) {
		pthread_mutex_unlock(&bc_lock);
		return -1;
	}
	if (!pid)
		pid = getpid();
	count_syscalls(1);
	pid_t self = mpk_os_gettid();
	mpk_reg_t bits = b->fn ? b->fn(b->arg) & b->clear : b->set;
	mpk_reg_t mine = stub ? 0 : mpk_arch_reg_update(b->clear, bits);
	mpk_reg_t own_and = 0, own_or = 0;
	int frames = stub ? 0 : edit_self(b->clear, bits, mine, &own_and, &own_or);
	req.clear = b->clear;
	req.set = b->set;
	req.fn = b->fn;
	req.arg = b->arg;
	req.seen_and = own_and;
	req.seen_or = own_or;
	req.n_fill = 0;
	/* The caller's own value, noted as every write under the lock is
	 * (mpk__pub_wrote: edit_self() has looked for its frames already). */
	if (!stub && !frames && blocks_none())
		pub_alone((mine & ~b->clear) | bits);
	else if (!stub)
		mpk__pub_note((mine & ~b->clear) | bits);
	req.skip = !b->fn && !stub && membarrier_all();
	__atomic_store_n(&req.n, 0, __ATOMIC_RELEASE);
	rc = reach_all(self);
	if (rc && b->undo_on_fail && !b->fn)
		undo(mine);
	__atomic_store_n(&req.n, 0, __ATOMIC_RELEASE);
	b->seen_and = __atomic_load_n(&req.seen_and, __ATOMIC_RELAXED);
	b->seen_or = __atomic_load_n(&req.seen_or, __ATOMIC_RELAXED);
	__atomic_add_fetch(&count.broadcasts, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&bc_lock);
	if (rc)
		errno = EAGAIN;
	return rc;
}

/* fork.c: the broadcast lock around fork(); a child has no broadcast under
 * way, and another pid. */
void mpk__broadcast_lock(void)
{
	pthread_mutex_lock(&bc_lock);
}

void mpk__broadcast_unlock(void)
{
	pthread_mutex_unlock(&bc_lock);
}

void mpk__broadcast_child(void)
{
	pthread_mutex_init(&bc_lock, NULL);
	req.n = req.n_fill = 0;
	req.pending = 0;
	req.undo = false;
	pid = getpid();
}
