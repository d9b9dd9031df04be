/* SPDX-License-Identifier: MIT */
/*
 * The threads mpkit has seen (thread.c) and the broadcast that reaches
 * them all (broadcast.c): what those two share, and what the rest of the
 * core calls of them.  Not installed.
 */
#ifndef MPK_THREAD_H
#define MPK_THREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core.h"
#include "testing.h"

/*
 * thread.c: the threads mpkit has seen.  A thread registers on its first
 * call through mpk__ensure_init() (not from the hw fast path) or when it
 * answers a broadcast (from the handler); its pthread key destructor gives
 * the entry back.  Entries are never freed: tid 0 is a free one.
 */
struct mpk_thread {
	pid_t tid; /* atomic */
	/* broadcast.c, under its lock: the broadcast that last targeted
	 * this entry, and under which tid. */
	pid_t bc_tid;
	uint64_t bc_gen;
	/* hw: the thread's register as it publishes it (arch.h), trusted by
	 * broadcasts only while pub_ok (atomic; set once and_/or_ cover
	 * every frame of the thread, cleared before the entry is freed). */
	struct mpk_arch_pub pub;
	int pub_ok;
};
/* The calling thread's entry, NULL until it registers (the hw fast path
 * goes the slow way then, which registers it).  Initial-exec: read by the
 * fast path and by signal handlers. */
#if defined(__PIE__) || !defined(__PIC__)
#define MPK_TLS_MODEL "local-exec" /* linked into an executable: one instruction */
#else
#define MPK_TLS_MODEL "initial-exec"
#endif
extern __thread struct mpk_thread *mpk__self __attribute__((tls_model(MPK_TLS_MODEL)));
/* After the calling thread wrote reg outside the fast path (mpk_g.lock
 * held, so no broadcast runs meanwhile): note it in its entry. */
void mpk__pub_note(mpk_reg_t reg);
/* The same, and if the thread runs no signal handler (it blocks no
 * signal), reg becomes all it is known to hold (broadcast.c). */
void mpk__pub_wrote(mpk_reg_t reg);
/* broadcast.c: make t's published register cover every frame of the
 * calling thread (registration, not in signal context); false if it
 * cannot tell (then t stays untrusted until a broadcast reaches it). */
bool mpk__pub_init(struct mpk_thread *t);
/* The AD bit of every key some registered thread may hold open (all of
 * them while an entry is untrusted): a hint for eviction, not exact. */
mpk_reg_t mpk__threads_open(void);
void mpk__thread_register(void);         /* not in signal context */
bool mpk__thread_register_signal(void);  /* signal-safe: existing free entries only */
int mpk__threads_reserve(size_t n);      /* n free entries for handlers; -1/ENOMEM */
struct mpk_thread *mpk__thread_next(struct mpk_thread *t); /* NULL starts; lock-free */
void mpk__thread_gone(struct mpk_thread *t, pid_t tid);   /* tid died unregistered */
int mpk__threads_claimed(void);
pid_t mpk__thread_self_tid(void); /* 0 if unregistered; signal-safe */
void mpk__threads_lock(void), mpk__threads_unlock(void), mpk__threads_child(void);

/* broadcast.c: mpk__broadcast() (testing.h: tests and the benchmark
 * call it too) applies reg = (reg & ~clear) | set in every thread.  The
 * general form: if fn is set, each thread (the caller too) gets
 * (reg & ~clear) | (fn(arg) & clear), fn running in that thread (signal
 * context: async-signal-safe, no locks).  seen_and/seen_or: the AND and OR
 * of the registers of every thread reached, before the edit. */
struct mpk_bcast {
	mpk_reg_t clear, set;
	mpk_reg_t (*fn)(const void *arg);
	const void *arg;
	mpk_reg_t seen_and, seen_or;
	/* On failure, give the threads reached (and the caller) their old
	 * bits back, where they still hold the new ones (not with fn). */
	bool undo_on_fail;
};
int mpk__broadcast_ex(struct mpk_bcast *b);
/* io_uring kernel threads the latest broadcast passed over (its /proc
 * scan): they keep whatever rights the kernel gave them.  Under bc_lock's
 * callers' mpk_g.lock. */
int mpk__broadcast_io_threads(void);
/* Broadcasts made (mpk_stats_get). */
uint64_t mpk__broadcast_count(void);
/* From initialisation, hw: register for membarrier(), without which every
 * broadcast signals every thread. */
void mpk__broadcast_setup(void);

/* fork.c's handlers for the broadcast's lock and state. */
void mpk__broadcast_lock(void), mpk__broadcast_unlock(void), mpk__broadcast_child(void);

#endif
