/* SPDX-License-Identifier: MIT */
/*
 * mpkit bench malloc's "loop": one thread, malloc and free in a tight
 * loop, the kind of program whose time is the allocator's fast path
 * (mimalloc-bench's glibc-simple is one).  Most blocks are freed at once;
 * one in eight waits in a window of 64 for a later turn, so that the
 * blocks are not all the same one.  Sizes 16 to 512 bytes.
 */
#include "mw.h"

#define WINDOW 64

int main(int argc, char **argv)
{
	long n = mw_amount(argc, argv, 60000000, 300000);
	unsigned char *win[WINDOW] = { 0 };
	size_t wn[WINDOW] = { 0 };
	uint64_t s = 0x1f2e3d4c5b6a7988ull, sum = 0;

	for (long i = 0; i < n; i++) {
		size_t sz = mw_size(&s, 16, 512);
		unsigned char *p = mw_alloc(sz);
		mw_stamp(p, sz, (uint64_t)i);
		if (i % 8) {
			sum += mw_check(p, sz);
			free(p);
			continue;
		}
		int k = (int)((i / 8) % WINDOW);
		if (win[k]) {
			sum += mw_check(win[k], wn[k]);
			free(win[k]);
		}
		win[k] = p, wn[k] = sz;
	}
	for (int k = 0; k < WINDOW; k++)
		if (win[k]) {
			sum += mw_check(win[k], wn[k]);
			free(win[k]);
		}
	printf("loop: %ld blocks, sum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
