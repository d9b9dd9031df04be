/* SPDX-License-Identifier: MIT */
/*
 * Misuse for the drop-in's reports (t_run_report, t_run_catches): the
 * one named by argv[1], made by a function of its own (noinline: its
 * frame is the one the report must start at).  Built with -g.
 *   double-free   free() twice
 *   realloc-freed realloc() of a freed block
 *   big-overflow  a write one page past the end of a 200 KB block
 *   big-slack     a write 8 bytes past the end of a 200 KB block
 *   slack         a write 4 bytes past the end of a 40-byte block
 *   small-overflow 40 bytes written past a 40-byte block, then its
 *                 neighbour freed
 *   interior-free free() of a block's address plus 16
 *   wild-free     free() of a pointer to the stack
 *   uaf-small     a write to a 40-byte block after its free
 *   uaf-big       a write to a 200 KB block after its free
 *   late          exit 0, leaving a child that makes a double free 1 s later
 *   stats         live blocks of 1 MB, freed, then exit 0
 * Misuse that is not caught ends with "not caught" on stderr, exit 3.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) static void release(char *p)
{
	free(p);
	__asm__ volatile("" ::: "memory"); /* no tail call: release's frame stays */
}

__attribute__((noinline)) static char *make(size_t n)
{
	char *p = malloc(n);
	if (p)
		memset(p, 1, n);
	__asm__ volatile("" ::: "memory");
	return p;
}

__attribute__((noinline)) static void overflow(char *p, size_t n)
{
	((volatile char *)p)[n + 4096] = 1;
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";
	char *p = make(40);

	if (!p)
		return 1;
	if (!strcmp(what, "double-free")) {
		release(p);
		release(p);
	} else if (!strcmp(what, "realloc-freed")) {
		release(p);
		p = realloc(p, 100);
	} else if (!strcmp(what, "big-overflow")) {
		char *b = make(200 * 1024);
		if (b)
			overflow(b, 200 * 1024);
	} else if (!strcmp(what, "big-slack")) {
		char *b = make(200 * 1024);
		if (b)
			overflow(b, 200 * 1024 + 8 - 4096);
	} else if (!strcmp(what, "slack")) {
		overflow(p, 44 - 4096);
		release(p);
	} else if (!strcmp(what, "small-overflow")) {
		char *q = make(40);
		memset(p, 'x', 80);
		release(q);
		release(p);
	} else if (!strcmp(what, "interior-free")) {
		release(p + 16);
	} else if (!strcmp(what, "wild-free")) {
		char local[64];
		release(local + (argc > 2));
	} else if (!strcmp(what, "uaf-small")) {
		release(p);
		overflow(p, 8 - 4096);
		free(make(40));
	} else if (!strcmp(what, "uaf-big")) {
		char *b = make(200 * 1024);
		release(b);
		overflow(b, 100 - 4096);
		free(make(200 * 1024));
	} else if (!strcmp(what, "late")) {
		if (fork() == 0) {
			sleep(1);
			release(p);
			release(p);
		}
		return 0;
	} else if (!strcmp(what, "stats")) {
		char *m[8];
		for (int i = 0; i < 8; i++)
			m[i] = make(1 << 20);
		for (int i = 0; i < 8; i++)
			free(m[i]);
		free(p);
		return 0;
	}
	fprintf(stderr, "malloc-misuse %s: not caught\n", what);
	return 3;
}
