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
static __thread volatile struct {
	int armed, faulted, code, pkey;
	void *addr;
} t_pr;

/* Touch p (read, or write v); true if it faulted (t_pr has the details). */
static inline bool t_touch(unsigned char *p, bool write, unsigned char v, unsigned char *got)
{
	unsigned char a = v;
	t_pr.faulted = 0;
	t_pr.armed = 1;
	if (write)
		__asm__ volatile("movb %%al, (%%rdi)" : : "a"(a), "D"(p) : "memory");
	else
		__asm__ volatile("movb (%%rdi), %%al" : "+a"(a) : "D"(p) : "memory");
	t_pr.armed = 0;
	if (got)
		*got = a;
	return t_pr.faulted;
}

/* In the SIGSEGV handler: the fault of an armed probe is recorded and its
 * 2-byte access skipped (true); any other fault is not a probe's (false). */
static inline bool t_probe_caught(const siginfo_t *si, ucontext_t *uc)
{
	if (!t_pr.armed)
		return false;
	t_pr.armed = 0;
	t_pr.faulted = 1;
	t_pr.code = si->si_code;
	t_pr.pkey = (int)si->si_pkey;
	t_pr.addr = si->si_addr;
	uc->uc_mcontext.gregs[REG_RIP] += 2; /* movb (%rdi),%al / movb %al,(%rdi) */
	return true;
}

#endif
