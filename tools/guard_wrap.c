/* SPDX-License-Identifier: MIT */
/*
 * The C library's calls that would carry the guarded library's rights
 * somewhere else (docs/guard.md, "Threads" and "longjmp"), wrapped by
 * libmpkit-guard.so for PROG and every library:
 *
 * pthread_create(): on hw a new thread copies its creator's PKRU, so a
 * thread created while its creator is inside the library (a callback of
 * the program's that starts one) would run with the domain open for
 * good.  The creator closes every guarded library's domain to its rights
 * outside for the clone, so the thread starts closed, then takes its
 * rights back; a thread whose start routine is a guarded library's own
 * code starts with them (its worker).  Not on soft: a new thread holds
 * only the base rights there whatever its creator holds, and closing
 * the creator's (the union's) for the clone would let the new thread
 * fault on a write its creator's open domain allows.
 *
 * longjmp(), _longjmp(), siglongjmp() (and glibc's __longjmp_chk(), what
 * _FORTIFY_SOURCE calls): a jump out of a callback skips the gates'
 * way out.  The target's stack pointer, from the jmp_buf, says which
 * gates it leaves (guard_unwind()); then the C library's own jump.
 */
/* This file defines longjmp and __longjmp_chk both: a fortified
 * <setjmp.h> (-D_FORTIFY_SOURCE, as distcheck and Debian's builds set)
 * would rename the first to the second. */
#undef _FORTIFY_SOURCE
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdlib.h>

#include "guard.h"

static void *next(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);

	if (!f)
		abort();
	return f;
}

/* Each guarded library's domain set to the rights r[] (or, to == 0, to
 * the rights outside, r[] getting the rights held): 0, or -1. */
static int set_all(int *r, int to)
{
	int n = __atomic_load_n(&guard_nlibs, __ATOMIC_ACQUIRE), rc = 0;

	for (int i = 0; !to && i < GUARD_LIBS; i++)
		r[i] = -1;
	for (int i = 0; i < n; i++) {
		mpk_domain *d = __atomic_load_n(&guard_libs[i].domain, __ATOMIC_ACQUIRE);
		if (!d)
			continue;
		if (!to)
			r[i] = mpk_get(d);
		int out = guard_libs[i].outside, want = to ? r[i] : out;
		if (r[i] >= 0 && r[i] != out && mpk_set(d, want))
			rc = -1;
	}
	return rc;
}

__attribute__((visibility("default"))) int pthread_create(pthread_t *t, const pthread_attr_t *attr,
							   void *(*fn)(void *), void *arg)
{
	static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	int now[GUARD_LIBS];

	if (!real)
		*(void **)&real = next("pthread_create");
	if (!__atomic_load_n(&guard_nlibs, __ATOMIC_ACQUIRE) || guard_lib_at((uintptr_t)fn) ||
	    mpk_backend() != MPK_BACKEND_HW)
		return real(t, attr, fn, arg);
	if (set_all(now, 0))
		return errno;
	int rc = real(t, attr, fn, arg), err = errno;
	if (set_all(now, 1))
		abort(); /* the creator would lose the libraries' rights */
	errno = err;
	return rc;
}

/* The stack pointer a jmp_buf jumps to: its 7th word with both C
 * libraries; glibc stores it mangled with the thread's pointer guard
 * (%fs:0x30: xor, then rotated left by 17). */
static uintptr_t jmp_sp(const void *env)
{
	uintptr_t sp = ((const uintptr_t *)env)[6];
#ifdef __GLIBC__
	uintptr_t guard;
	__asm__("mov %%fs:0x30, %0" : "=r"(guard));
	sp = ((sp >> 17) | (sp << 47)) ^ guard;
#endif
	return sp;
}

typedef void (*jump_fn)(void *, int);

static _Noreturn void jump(const char *name, jump_fn *real, void *env, int val)
{
	jump_fn f = __atomic_load_n(real, __ATOMIC_RELAXED);

	if (!f) {
		*(void **)&f = next(name);
		__atomic_store_n(real, f, __ATOMIC_RELAXED);
	}
	guard_unwind(jmp_sp(env));
	f(env, val);
	abort();
}

__attribute__((visibility("default"))) void longjmp(jmp_buf env, int val)
{
	static jump_fn real;
	jump("longjmp", &real, env, val);
}

__attribute__((visibility("default"))) void _longjmp(jmp_buf env, int val)
{
	static jump_fn real;
	jump("_longjmp", &real, env, val);
}

__attribute__((visibility("default"))) void siglongjmp(sigjmp_buf env, int val)
{
	static jump_fn real;
	jump("siglongjmp", &real, env, val);
}

#ifdef __GLIBC__
__attribute__((visibility("default"), noreturn)) void __longjmp_chk(jmp_buf env, int val);
void __longjmp_chk(jmp_buf env, int val)
{
	static jump_fn real;
	jump("__longjmp_chk", &real, env, val);
}
#endif
