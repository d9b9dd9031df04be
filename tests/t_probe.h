/*
 * Probes made by a thread itself: an access that may fault, which the
 * program's SIGSEGV handler records and skips (t_model_random,
 * t_vdom_fault_probes).  The handler calls t_probe_caught() first.
 */
#ifndef MPK_TEST_PROBE_H
#define MPK_TEST_PROBE_H

#include "t.h" /* first: _GNU_SOURCE, for REG_RIP */
#include <stdbool.h>
#include <ucontext.h>

/* This thread's probe: armed while it runs; its fault, if it faulted. */
struct t_probe_state {
	int armed, faulted, code, pkey;
	void *addr;
};
extern __thread volatile struct t_probe_state t_pr;

/* Touch p (read, or write v); true if it faulted (t_pr has the details). */
bool t_touch(unsigned char *p, bool write, unsigned char v, unsigned char *got);

/* In the SIGSEGV handler: the fault of an armed probe is recorded and its
 * 2-byte access skipped (true); any other fault is not a probe's (false). */
bool t_probe_caught(const siginfo_t *si, ucontext_t *uc);

#endif
