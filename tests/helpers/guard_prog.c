/* SPDX-License-Identifier: MIT */
/*
 * A program that knows nothing of mpkit, calling libguardtest.so every
 * way a program can (t_guard_cli): through its PLT, through a pointer it
 * took, through dlsym(), with stack and variadic arguments, recursion and
 * a callback that calls back in.  With an argument it then does one
 * forbidden thing: "write" stores into the library's state through the
 * pointer the library handed out, "past" 24 bytes past it (pointer
 * arithmetic, still in the library's static), "wild" 64 bytes before it
 * (padding no symbol of the library covers), "tail" into the variable on
 * the last page of the library's data, "report" writes the state three times
 * from one instruction and the last page once, then calls the library
 * again (for --report), "count" single-steps a call and counts its
 * instructions, "read" loads it, "thread" has another
 * thread store into it while the main thread is inside the library (in
 * a callback): on hw only the thread inside holds the rights; "spawn"
 * has the library start a worker of its own, which writes the state,
 * then a callback start a thread that writes it (on hw it starts closed);
 * "jump" longjmps out of a callback, and out of a nested one back into
 * an outer callback, then writes the state (closed again).
 * "stats" alone (for MPKIT_GUARD_STATS) makes a known number of calls: 10 of
 * g_add() and g_rec(5) (one call: the 5 inner ones, through a pointer
 * from the library's own text, skip the gate) and g_add2() (one call: its
 * two of g_add() go through the library's own PLT, past the gate) in the
 * main thread, 7 of g_add() in a thread that ends, 3 in a child made by
 * fork().
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guard_lib.h"
#include "step_count.h"

static long back_in(long v)
{
	return g_add(v);
}

static int go[2];

/* Started outside the library: waits until main is inside, then writes. */
static void *writer(void *arg)
{
	long *state = arg;
	char c;

	if (read(go[0], &c, 1) != 1)
		return NULL;
	*state = 9;
	printf("other thread wrote %ld\n", *state);
	fflush(stdout);
	return NULL;
}

static pthread_t writer_thread;

/* "count": the fewest instructions, WRPKRU and system calls of 8 calls
 * of g_add() single-stepped, after a warm-up. */
static void count(void)
{
	struct sigaction sa = { .sa_sigaction = step_trap, .sa_flags = SA_SIGINFO };
	long best[3] = { 0, 0, 0 };

	if (sigaction(SIGTRAP, &sa, NULL))
		return;
	for (int i = 0; i < 100; i++)
		g_add(0);
	for (int i = 0; i < 8; i++) {
		STEP_START();
		g_add(1);
		step_stop();
		if (!i || steps < best[0])
			best[0] = steps, best[1] = wrpkru, best[2] = syscalls;
	}
	printf("count %ld steps %ld wrpkru %ld syscalls\n", best[0], best[1], best[2]);
}

/* One instruction that writes wherever it is told. */
static __attribute__((noinline)) void poke(volatile long *p, long v)
{
	*p = v;
}

/* Called by the library: main is inside it now. */
static long let_writer_write(long v)
{
	if (write(go[1], "x", 1) != 1 || pthread_join(writer_thread, NULL))
		return -1;
	return v;
}

/* "spawn": a thread started from a callback, inside the library. */
static void *spawned(void *arg)
{
	long *state = arg;

	*state = 9;
	printf("spawned thread wrote %ld\n", *state);
	fflush(stdout);
	return NULL;
}

static long spawn_writer(long v)
{
	pthread_t t;

	if (pthread_create(&t, NULL, spawned, g_ptr()) || pthread_join(t, NULL))
		return -1;
	return v;
}

/* "jump": out of callbacks with longjmp and siglongjmp. */
static jmp_buf outer;
static sigjmp_buf inner;

static long jump_out(long v)
{
	longjmp(outer, (int)v);
}

static long jump_in(long v)
{
	siglongjmp(inner, (int)v);
}

/* Inside the library: a jump from a nested callback back here leaves
 * the inner gate only; this callback then calls back in and writes. */
static long jump_nested(long v)
{
	if (!sigsetjmp(inner, 1))
		return g_apply(jump_in, 1) - 1000;
	return g_add(v);
}

static void *seven(void *arg)
{
	for (int i = 0; i < 7; i++)
		g_add(1);
	return arg;
}

/* The calls MPKIT_GUARD_STATS must count: this process 23 (18 from
 * outside), the child 3 (3), its parent's not included. */
static int stats(void)
{
	pthread_t t;
	int st;

	for (int i = 0; i < 10; i++)
		g_add(1);
	g_rec(5);
	if (g_add2(1) != 17) /* 10, 5 more, 2 more: g_add() did run twice */
		return 1;
	if (pthread_create(&t, NULL, seven, NULL) || pthread_join(t, NULL))
		return 1;
	pid_t pid = fork();
	if (pid == 0) {
		for (int i = 0; i < 3; i++)
			g_add(1);
		exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || st)
		return 1;
	printf("stats %d\n", (int)pid);
	return 0;
}

int main(int argc, char **argv)
{
	long (*p)(long) = &g_add, (*q)(long);

	if (argc > 1 && !strcmp(argv[1], "stats"))
		return stats();

	*(void **)&q = dlsym(RTLD_DEFAULT, "g_add");
	printf("plt %ld\n", g_add(1));
	printf("pointer %ld\n", p(1));
	printf("dlsym %ld\n", q ? q(1) : -1);
	printf("variadic %ld\n", g_sum(3, 10, 20, 30));
	printf("stack %.1f\n", g_many(1, 2, 3, 4, 5, 6, 7, 8, 1.5));
	printf("recursion %ld\n", g_rec(5));
	errno = 42;
	printf("callback %ld\n", g_apply(back_in, 1));
	printf("errno %d\n", errno);
	printf("ungated %ld\n", g_zero());
	long copy = 0, none = g_store(NULL), some = g_store(&copy);
	printf("branch %ld %ld %ld\n", none, some, copy);
	printf("loop %ld\n", g_loop(4));
	fflush(stdout);
	if (argc > 1 && !strcmp(argv[1], "write")) {
		*g_ptr() = 7;
		printf("wrote %ld\n", *g_ptr());
	}
	if (argc > 1 && !strcmp(argv[1], "past")) {
		g_ptr()[3] = 7;
		printf("wrote past %ld\n", g_ptr()[3]);
	}
	if (argc > 1 && !strcmp(argv[1], "wild")) {
		((volatile char *)g_ptr())[-64] = 7;
		printf("wrote wild\n");
	}
	if (argc > 1 && !strcmp(argv[1], "count"))
		count();
	if (argc > 1 && !strcmp(argv[1], "report")) {
		for (long i = 0; i < 3; i++)
			poke(g_ptr(), i);
		*g_tail() = 3;
		long after = g_add(1);
		printf("report %ld\n", after);
	}
	if (argc > 1 && !strcmp(argv[1], "tail")) {
		*g_tail() = 3;
		printf("wrote tail %ld\n", *g_tail());
	}
	if (argc > 1 && !strcmp(argv[1], "thread")) {
		if (pipe(go) || pthread_create(&writer_thread, NULL, writer, g_ptr()))
			return 1;
		printf("inside %ld\n", g_apply(let_writer_write, 5));
	}
	if (argc > 1 && !strcmp(argv[1], "spawn")) {
		printf("library thread %ld\n", g_spawn(2));
		fflush(stdout);
		printf("callback thread %ld\n", g_apply(spawn_writer, 4));
	}
	if (argc > 1 && !strcmp(argv[1], "jump")) {
		volatile int jumps = 0;
		if (setjmp(outer))
			jumps++;
		else
			g_apply(jump_out, 1);
		printf("jumped %d, then %ld\n", jumps, g_add(1));
		printf("nested %ld\n", g_apply(jump_nested, 10));
		fflush(stdout);
		*g_ptr() = 7;
		printf("wrote after the jumps %ld\n", *g_ptr());
	}
	if (argc > 1 && !strcmp(argv[1], "read"))
		printf("read %ld\n", *(volatile long *)g_ptr());
	return 0;
}
