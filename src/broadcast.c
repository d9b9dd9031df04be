/* SPDX-License-Identifier: MIT */
/*
 * Rewriting the rights register of every thread.  PKRU is per thread and no
 * system call sets another thread's, but a signal handler can: the kernel
 * saves the interrupted PKRU in the signal frame's XSAVE image and sigreturn
 * loads it back.  So: signal each thread, edit the image, wait for every
 * acknowledgement.  Threads created meanwhile inherit PKRU from a thread
 * already done or are found by the next scan of /proc/self/task.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "os.h"


#define MAX_WAIT_NS (5ull * 1000 * 1000 * 1000)
/* A thread may block every signal for a moment (glibc does while a new
 * thread starts, and around some of its own work): only one that keeps the
 * signal blocked and pending this long cannot answer. */
#define BLOCKED_GRACE_NS (100ull * 1000 * 1000)

/* Signal frames a thread may be nested in that a broadcast edits. */
#define FRAMES_MAX 8

struct target {
	pid_t tid;
	int state;     /* 0 sent, 1 done, 2 failed (no XSAVE image); atomic */
	int nold;
	/* Each frame's register before the edit, outermost (the thread's own
	 * code) first, for an undo. */
	mpk_reg_t old[FRAMES_MAX];
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
	struct target *t;
	size_t n, cap;
} req;

/*
 * Edit every frame the thread is nested in, not only the innermost: a
 * thread caught inside a signal handler gets the handler's register from
 * the innermost frame and its own code's from the outermost, at the
 * handler's sigreturn.  What the thread holds is the outermost one.
 */
static int edit(struct target *t, void *uc)
{
	void *fr[FRAMES_MAX];
	mpk_reg_t reg[FRAMES_MAX];
	int nf = mpk_arch_frame_chain(uc, fr, FRAMES_MAX);

	for (int j = 0; j < nf; j++)
		if (!mpk_arch_frame_reg_get(fr[j], &reg[j]))
			return 2;
	mpk_reg_t bits = req.undo ? 0 : req.fn ? req.fn(req.arg) & req.clear : req.set;
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
		/* A rights change cut short here must not write back what
		 * it read before this edit. */
		mpk_arch_frame_restart(fr[j]);
		if (!req.undo)
			t->old[k] = reg[j];
	}
	if (!req.undo) {
		t->nold = nf;
		__atomic_and_fetch(&req.seen_and, reg[nf - 1], __ATOMIC_RELAXED);
		__atomic_or_fetch(&req.seen_or, reg[nf - 1], __ATOMIC_RELAXED);
	}
	return 1;
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	int saved = errno;
	pid_t self = mpk_os_gettid();
	struct target *t = __atomic_load_n(&req.t, __ATOMIC_ACQUIRE);
	size_t n = __atomic_load_n(&req.n, __ATOMIC_ACQUIRE);

	for (size_t i = 0; t && i < n; i++) {
		if (t[i].tid != self || __atomic_load_n(&t[i].state, __ATOMIC_ACQUIRE))
			continue;
		__atomic_store_n(&t[i].state, edit(&t[i], uc), __ATOMIC_RELEASE);
	}
	errno = saved;
}

static int install(void)
{
	static bool done;
	struct sigaction sa;

	if (done)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	if (sigaction(MPK_SIGNAL, &sa, NULL))
		return -1;
	done = true;
	return 0;
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
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d", (int)tid);
	return access(path, F_OK) == 0;
}

/*
 * Whether tid blocks the signal while it is still pending: then it cannot
 * answer.  Blocked alone is not enough: a thread running the handler has
 * it blocked too (the handler blocks every signal), but has it no longer
 * pending, and is about to answer.
 */
static bool thread_blocks(pid_t tid)
{
	char path[64], line[128];
	unsigned long long blocked = 0, pending = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	if (!(f = fopen(path, "re")))
		return false;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "SigPnd:", 7))
			pending = strtoull(line + 7, NULL, 16);
		else if (!strncmp(line, "SigBlk:", 7))
			blocked = strtoull(line + 7, NULL, 16);
	fclose(f);
	return (blocked & pending) >> (MPK_SIGNAL - 1) & 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int count_tasks(void)
{
	DIR *dir = opendir("/proc/self/task");
	int n = 0;

	if (!dir)
		return -1;
	while (readdir(dir))
		n++;
	closedir(dir);
	return n;
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
	struct target *t = calloc(cap, sizeof(*t));
	if (!t)
		return -1;
	if (req.t)
		memcpy(t, req.t, req.n * sizeof(*t));
	__atomic_store_n(&req.t, t, __ATOMIC_RELEASE);
	req.cap = cap;
	return 0;
}

/* Signal every thread not yet a target; returns how many were added. */
static int signal_new(pid_t self)
{
	int tasks = count_tasks();
	DIR *dir;
	struct dirent *e;
	int added = 0;

	if (tasks < 0 || reserve((size_t)tasks + 8) || !(dir = opendir("/proc/self/task")))
		return -1;
	while ((e = readdir(dir)) && req.n < req.cap) {
		pid_t tid = (pid_t)atoi(e->d_name);
		if (tid <= 0 || tid == self || known(req.t, req.n, tid))
			continue;
		req.t[req.n] = (struct target){ .tid = tid };
		__atomic_store_n(&req.n, req.n + 1, __ATOMIC_RELEASE);
		if (mpk_os_tgkill(getpid(), tid, MPK_SIGNAL) == 0)
			added++;
		else /* gone already */
			__atomic_store_n(&req.n, req.n - 1, __ATOMIC_RELEASE);
	}
	closedir(dir);
	return added;
}

/* Wait for t[from..n): 0 when all answered or died, -1 when one cannot. */
static int wait_round(struct target *t, size_t from, size_t n)
{
	uint64_t start = now_ns();
	struct timespec nap = { 0, 20000 };
	int rc = 0;

	for (size_t i = from; i < n; i++) {
		int state;
		uint64_t blocked_since = 0;
		while (!(state = __atomic_load_n(&t[i].state, __ATOMIC_ACQUIRE))) {
			if (!thread_alive(t[i].tid))
				break;
			uint64_t now = now_ns();
			if (!thread_blocks(t[i].tid))
				blocked_since = 0;
			else if (!blocked_since)
				blocked_since = now;
			if ((blocked_since && now - blocked_since > BLOCKED_GRACE_NS) ||
			    now - start > MAX_WAIT_NS) {
				rc = -1;
				break;
			}
			nanosleep(&nap, NULL);
		}
		if (state == 2)
			rc = -1;
	}
	return rc;
}

/*
 * After a failed broadcast: signal again the threads that were reached, to
 * put their old bits back (each checks it still holds the new ones: a
 * thread that set its own rights since keeps them).  Best effort: a thread
 * that cannot be reached now keeps the new bits.
 */
static void undo(pid_t self, mpk_reg_t mine)
{
	size_t n = 0;

	for (size_t i = 0; i < req.n; i++)
		if (__atomic_load_n(&req.t[i].state, __ATOMIC_ACQUIRE) == 1)
			req.t[n] = req.t[i], req.t[n++].state = 0;
	__atomic_store_n(&req.n, 0, __ATOMIC_RELEASE);
	req.undo = true;
	for (size_t i = 0; i < n; i++) {
		__atomic_store_n(&req.n, i + 1, __ATOMIC_RELEASE);
		if (req.t[i].tid == self || mpk_os_tgkill(getpid(), req.t[i].tid, MPK_SIGNAL))
			__atomic_store_n(&req.t[i].state, 1, __ATOMIC_RELEASE); /* gone */
	}
	wait_round(req.t, 0, n);
	req.undo = false;
	if ((mpk_arch_reg_read() & req.clear) == req.set)
		mpk_arch_reg_update(req.clear, mine & req.clear);
}

/*
 * The caller too may be inside a signal handler (mpkit called from one):
 * edit the frames its handlers return to, as edit() does for the others.
 * Returns the register its own code holds, before the edit (mine, when
 * it runs no handler).
 */
static mpk_reg_t edit_self(mpk_reg_t clear, mpk_reg_t bits, mpk_reg_t mine)
{
	void *fr[FRAMES_MAX];
	int nf = mpk_arch_self_frames(MPK_SIGNAL, fr, FRAMES_MAX);
	mpk_reg_t reg;

	for (int j = 0; j < nf; j++)
		if (mpk_arch_frame_reg_get(fr[j], &reg)) {
			mpk_arch_frame_reg_set(fr[j], (reg & ~clear) | bits);
			mpk_arch_frame_restart(fr[j]);
			mine = reg;
		}
	return mine;
}

int mpk__broadcast(mpk_reg_t clear, mpk_reg_t set)
{
	struct mpk_bcast b = { .clear = clear, .set = set };
	return mpk__broadcast_ex(&b);
}

int mpk__broadcast_ex(struct mpk_bcast *b)
{
	pid_t self = mpk_os_gettid();
	int rc = 0, added;

	b->seen_and = ~(mpk_reg_t)0;
	b->seen_or = 0;
	if (mpk_g.backend != MPK_BACKEND_HW)
		return 0; /* no rights register to rewrite */
	pthread_mutex_lock(&bc_lock);
	if (install()) {
		pthread_mutex_unlock(&bc_lock);
		return -1;
	}
	mpk_reg_t bits = b->fn ? b->fn(b->arg) & b->clear : b->set;
	mpk_reg_t mine = mpk_arch_reg_update(b->clear, bits);
	mpk_reg_t own = edit_self(b->clear, bits, mine);
	req.clear = b->clear;
	req.set = b->set;
	req.fn = b->fn;
	req.arg = b->arg;
	req.seen_and = own;
	req.seen_or = own;
	__atomic_store_n(&req.n, 0, __ATOMIC_RELEASE);
	/* Rounds until a scan finds no thread that was not signalled. */
	do {
		size_t from = req.n;
		added = signal_new(self);
		if (added < 0 || wait_round(req.t, from, req.n))
			rc = -1;
	} while (added > 0);
	if (rc && b->undo_on_fail && !b->fn)
		undo(self, mine);
	__atomic_store_n(&req.n, 0, __ATOMIC_RELEASE);
	b->seen_and = __atomic_load_n(&req.seen_and, __ATOMIC_RELAXED);
	b->seen_or = __atomic_load_n(&req.seen_or, __ATOMIC_RELAXED);
	__atomic_add_fetch(&mpk_g.broadcasts, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&bc_lock);
	if (rc)
		errno = EAGAIN;
	return rc;
}
