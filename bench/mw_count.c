/* SPDX-License-Identifier: MIT */
/*
 * The loop `mpkit bench malloc --count` single-steps (bench/
 * malloc_count.c): after a warm-up that puts a block of the size in the
 * allocator's cache, it stops itself, runs N malloc+free pairs of that
 * size, and stops itself again.  The tracer counts the instructions run
 * outside this program's own code between the two stops: the
 * allocator's, wherever it lives (libc, a preloaded library) and what
 * it calls.  Not a workload: it prints nothing.
 */
#include <signal.h>

#include "mw.h"

/* Through volatile pointers: every pair is a real call, never folded. */
static void *(*volatile do_malloc)(size_t) = malloc;
static void (*volatile do_free)(void *) = free;

int main(int argc, char **argv)
{
	char *end;
	long size = argc == 3 ? strtol(argv[1], &end, 10) : 0;
	long n = size > 0 && !*end ? strtol(argv[2], &end, 10) : -1;

	if (n < 0 || *end) {
		fprintf(stderr, "usage: %s SIZE PAIRS (run by mpkit bench malloc --count, under ptrace)\n", argv[0]);
		return 2;
	}
	for (int i = 0; i < 1000; i++) {
		void *p = do_malloc((size_t)size);
		if (!p)
			return 1;
		*(volatile char *)p = 1;
		do_free(p);
	}
	raise(SIGSTOP);
	for (long i = 0; i < n; i++)
		do_free(do_malloc((size_t)size));
	raise(SIGSTOP);
	return 0;
}
