/* SPDX-License-Identifier: MIT */
/*
 * t_guard_multi's program: it links libguardtest.so and libguardtwo.so
 * (which calls the first) and knows nothing of mpkit.  No argument: calls
 * into each library and from one into the other, their results printed.
 * "write1"/"write2": it writes the state libguardtest/libguardtwo hands
 * out; "stray": libguardtwo's code writes libguardtest's state;
 * "both": it writes each library's state once (for --report);
 * "jump1"/"jump2": a callback run inside both libraries (libguardtwo
 * calling libguardtest) longjmps out, then the program writes the
 * state of libguardtest/libguardtwo: both domains closed again;
 * "thread1"/"thread2": such a callback starts a thread that writes that
 * state (on hw it starts with both domains closed); "heap": it reads,
 * then frees a block libguardtwo allocated, "heapwrite": it writes one;
 * "read2": it reads libguardtwo's state, not libguardtest's, then writes
 * it (--lib libguardtest,deny=all --lib libguardtwo).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guard_lib.h"
#include "guard_two_lib.h"

static jmp_buf back;
static long *target;

static void *writer(void *arg)
{
	(void)arg;
	*target = 15;
	printf("thread wrote\n");
	return NULL;
}

static long spawn(long v)
{
	pthread_t t;

	if (pthread_create(&t, NULL, writer, NULL) || pthread_join(t, NULL))
		return -1;
	return v;
}

static long leave(long v)
{
	longjmp(back, (int)v);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	printf("add %ld\n", g_add(1));
	printf("add2 %ld\n", g2_add(2));
	printf("call %ld\n", g2_call(3));
	printf("back %ld\n", g2_back(5));
	if (!strcmp(mode, "read2")) {
		printf("two %ld\n", *g2_ptr());
		fflush(stdout);
		*g2_ptr() = 12;
		printf("wrote two\n");
		return 0;
	}
	printf("read %ld %ld\n", *g_ptr(), *g2_ptr());
	fflush(stdout);
	if (!strcmp(mode, "write1"))
		*g_ptr() = 11;
	else if (!strcmp(mode, "write2"))
		*g2_ptr() = 12;
	else if (!strcmp(mode, "stray"))
		g2_poke(g_ptr(), 13);
	else if (!strcmp(mode, "both"))
		*g_ptr() = 11, *g2_ptr() = 12;
	else if (!strncmp(mode, "heap", 4)) {
		long *b = g2_block();
		printf("block %ld\n", b ? *b : -1);
		fflush(stdout);
		if (b && !strcmp(mode, "heapwrite"))
			*(volatile long *)b = 17;
		free(b);
	} else if (!strncmp(mode, "thread", 6)) {
		target = mode[6] == '1' ? g_ptr() : g2_ptr();
		printf("spawn %ld\n", g2_via(spawn, 9));
	} else if (!strncmp(mode, "jump", 4)) {
		long *p = mode[4] == '1' ? g_ptr() : g2_ptr();
		if (!setjmp(back))
			g2_via(leave, 7);
		printf("jumped\n");
		fflush(stdout);
		*p = 14;
	}
	printf("wrote %ld %ld\n", *g_ptr(), *g2_ptr());
	return 0;
}
