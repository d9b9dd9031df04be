/* SPDX-License-Identifier: MIT */
/*
 * Does touching p fault?  The check that a closed region really is closed
 * and a re-opened one really open, before it is measured.  On x86-64 the
 * access is one known 2-byte instruction and the SIGSEGV handler steps over
 * it, so the thread returns through sigreturn with its own PKRU (a
 * siglongjmp would keep the handler's PKRU, which closes every key).
 * Elsewhere: sigsetjmp.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

#include "engine.h"

static volatile sig_atomic_t probe_faulted, probe_code;

#if defined(__x86_64__)
__asm__(".pushsection .text\n"
	".p2align 4\n"
	".globl bench_probe_load\n"
	".hidden bench_probe_load\n"
	".type bench_probe_load, @function\n"
	"bench_probe_load:\n"
	"\tmovb (%rdi), %al\n" /* 8a 07 */
	"\tret\n"
	".size bench_probe_load, .-bench_probe_load\n"
	".p2align 4\n"
	".globl bench_probe_store\n"
	".hidden bench_probe_store\n"
	".globl bench_probe_store_insn\n"
	".hidden bench_probe_store_insn\n"
	".type bench_probe_store, @function\n"
	"bench_probe_store:\n"
	"\tmovl %esi, %eax\n" /* 89 f0 */
	"bench_probe_store_insn:\n"
	"\tmovb %al, (%rdi)\n" /* 88 07 */
	"\tret\n"
	".size bench_probe_store, .-bench_probe_store\n"
	".popsection\n");
unsigned char bench_probe_load(const volatile void *p);
void bench_probe_store(volatile void *p, int v);
extern const char bench_probe_store_insn[];

static void probe_handler(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uintptr_t ip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];

	if (ip == (uintptr_t)bench_probe_load || ip == (uintptr_t)bench_probe_store_insn) {
		probe_faulted = 1;
		probe_code = si->si_code;
		uc->uc_mcontext.gregs[REG_RIP] += 2;
		return;
	}
	signal(sig, SIG_DFL); /* not ours: fault again, for real */
}

static void touch_once(volatile unsigned char *p, int write, int v, unsigned char *val)
{
	if (write)
		bench_probe_store(p, v);
	else
		*val = bench_probe_load(p);
}
#else
static sigjmp_buf probe_env;

static void probe_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	probe_faulted = 1;
	probe_code = si->si_code;
	siglongjmp(probe_env, 1);
}

static void touch_once(volatile unsigned char *p, int write, int v, unsigned char *val)
{
	if (!sigsetjmp(probe_env, 1)) {
		if (write)
			*p = (unsigned char)v;
		else
			*val = *p;
	}
}
#endif

int bench__probe(volatile unsigned char *p, int write, int v, unsigned char *val)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = probe_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &old);
	probe_faulted = 0;
	touch_once(p, write, v, val);
	sigaction(SIGSEGV, &old, NULL);
	return probe_faulted ? (probe_code ? probe_code : -1) : 0;
}
