/* SPDX-License-Identifier: MIT */
/*
 * libguardtest.so, the library `mpkit guard` guards in t_guard_cli: its
 * state is a static (never copy-relocated into the program), changed by
 * calls of every shape a gate must pass untouched (stack and variadic
 * arguments, a double returned, recursion, a callback that calls back
 * in), and g_ptr() hands out its address as a library's API might;
 * g_zero() is too short to patch, and g_loop() loops back into its own
 * first 5 bytes (a branch the patch would land in the middle of);
 * g_add2() calls g_add() through the library's own PLT.
 */
#include <pthread.h>
#include <stdarg.h>

#include "guard_lib.h"

/* state fills a page of its own (in .data, ahead of .bss) and tail
 * starts the segment's last page, which it shares with nothing of the
 * library's: with musl's loader the rest of that page is its malloc's,
 * and the guard leaves it out (docs/guard.md), so a write there is
 * caught with glibc and not with musl, and one into state with both. */
static struct {
	long state;
	char rest[4096 - sizeof(long)];
} own __attribute__((section(".data"), aligned(4096)));
static long tail;

long g_add(long by)
{
	own.state += by;
	return own.state;
}

long g_sum(int n, ...)
{
	va_list ap;
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		own.state += va_arg(ap, int);
	va_end(ap);
	return own.state;
}

double g_many(int a, int b, int c, int d, int e, int f, int g, int h, double x)
{
	own.state += a + b + c + d + e + f + g + h;
	return x * 2 + (double)own.state;
}

/* Not a loop: each level is a call through the gate. */
/* Each level is called through a pointer the compiler cannot follow, so
 * that it stays a call into the patched entry (clang made the direct
 * recursion a loop, whatever the attributes asked). */
long g_rec(int n)
{
	long (*self)(int) = g_rec;

	__asm__("" : "+r"(self));
	if (n <= 0)
		return own.state;
	own.state++;
	/* A call, not a tail jump: its return address is in the library's
	 * text, so it skips the gate (t_guard_cli counts it). */
	long r = self(n - 1);
	__asm__("" : "+r"(r));
	return r;
}

long g_apply(long (*fn)(long), long v)
{
	own.state += 100;
	return fn(v);
}

/* Starts with test+je: the patch moves a conditional branch. */
long g_store(long *p)
{
	if (!p)
		return -1;
	*p = own.state;
	return 0;
}

/* 3 bytes (xor, ret): too short for the patch's jmp, so left ungated and
 * named; it touches no state. */
long g_zero(void)
{
	return 0;
}

/* The sum 1..n (n > 0) in a loop whose head is 2 bytes in: its jnz lands
 * inside the 5 bytes a jmp would overwrite, so the patcher refuses it
 * (named, left ungated) rather than send the loop into the jmp's middle.
 * Written in assembly: a compiler may lay a loop out any way it likes. */
__asm__(".text\n\t"
	".globl g_loop\n\t"
	".type g_loop, @function\n"
	"g_loop:\n\t"
	"xorl %eax, %eax\n"
	"1:\taddq %rdi, %rax\n\t"
	"decq %rdi\n\t"
	"jnz 1b\n\t"
	"ret\n\t"
	".size g_loop, . - g_loop");

/* g_add() twice, by, through the library's own PLT (a call written so:
 * a compiler may make such a call direct, or inline it, as it likes):
 * the guard sends those slots past the gate, so a call of g_add2() from
 * outside is one call through the gate, not three. */
__asm__(".text\n\t"
	".globl g_add2\n\t"
	".type g_add2, @function\n"
	"g_add2:\n\t"
	"pushq %rbx\n\t"
	"movq %rdi, %rbx\n\t"
	"movq %rbx, %rdi\n\t"
	"call g_add@PLT\n\t"
	"movq %rbx, %rdi\n\t"
	"call g_add@PLT\n\t"
	"popq %rbx\n\t"
	"ret\n\t"
	".size g_add2, . - g_add2");

long *g_ptr(void)
{
	return &own.state;
}

long *g_tail(void)
{
	return &tail;
}

/* A worker of the library's own: its start routine is the library's
 * code, so it starts with the rights of its creator (inside). */
static void *worker(void *arg)
{
	own.state += (long)arg;
	return NULL;
}

long g_spawn(long v)
{
	pthread_t t;

	if (pthread_create(&t, NULL, worker, (void *)v) || pthread_join(t, NULL))
		return -1;
	return own.state;
}
