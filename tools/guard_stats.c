/* SPDX-License-Identifier: MIT */
/*
 * MPKIT_GUARD_STATS=FILE (docs/guard.md, "Cost"): at exit each guarded
 * process appends a line to FILE for each library it guarded, saying how
 * many calls went through
 * the gate and how many of them opened the domain (a call from outside;
 * the others were re-entries, which change no rights).  The counting is
 * a per-thread counter in the gate (guard_gate.c), always kept: one
 * increment a call.  A thread's counts go into the process's total when
 * it ends (a thread-specific key's destructor, created only when FILE is
 * asked for), the exiting thread's at exit.  Not counted: threads still
 * running at exit, a process that ends by _exit() or a signal, or that
 * replaces itself with exec.  `mpkit bench guard` sums the lines.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "guard.h"

int guard_stats_on;
static const char *file;
static pthread_key_t key;
static unsigned long total_calls[GUARD_LIBS], total_opens[GUARD_LIBS];

/* The thread's counts into the total (from its key's destructor). */
static void thread_done(void *v)
{
	(void)v;
	for (int i = 0; i < GUARD_LIBS; i++) {
		__atomic_fetch_add(&total_calls[i], guard_calls[i], __ATOMIC_RELAXED);
		__atomic_fetch_add(&total_opens[i], guard_opens[i], __ATOMIC_RELAXED);
	}
}

/* fork(): the child counts its own calls, not its parent's. */
static void child_reset(void)
{
	for (int i = 0; i < GUARD_LIBS; i++)
		total_calls[i] = total_opens[i] = guard_calls[i] = guard_opens[i] = 0;
}

void guard_stats_start(void)
{
	file = getenv("MPKIT_GUARD_STATS");
	if (!file || !*file || pthread_key_create(&key, thread_done) || pthread_atfork(NULL, NULL, child_reset))
		return;
	guard_stats_on = 1;
}

void guard_stats_thread(void)
{
	/* Any value but NULL: the destructor runs at the thread's end. */
	if (pthread_setspecific(key, &key))
		return;
}

/* A line for each library guarded. */
void guard_stats_end(void)
{
	char line[512];

	if (!guard_stats_on)
		return;
	int fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	int be = mpk_backend();
	for (int i = 0; i < guard_nlibs; i++) {
		if (!guard_libs[i].domain)
			continue;
		/* One write(): the lines of processes ending together stay whole. */
		int n = snprintf(line, sizeof(line),
				 "mpkit-guard-stats pid=%ld lib=%s calls=%lu opens=%lu backend=%s\n", (long)getpid(),
				 guard_libs[i].file, total_calls[i] + guard_calls[i], total_opens[i] + guard_opens[i],
				 be < 0 ? "none" : mpk_backend_name(be));
		if (n > 0 && write(fd, line, (size_t)n) < 0)
			break;
	}
	close(fd);
}
