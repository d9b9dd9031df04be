/* SPDX-License-Identifier: MIT */
/*
 * qsort() without malloc(): glibc's qsort() takes a buffer from malloc()
 * for arrays over 1 KiB, and mpkit sorts under its locks, where the
 * process's malloc (mpkit's heap, maybe) must not be called.  A heapsort:
 * in place, O(n log n), no recursion.
 */
#include <stddef.h>
#include <string.h>

#include "core.h"

static void swap(char *a, char *b, size_t size)
{
	while (size--) {
		char t = *a;
		*a++ = *b;
		*b++ = t;
	}
}

/* Move element i down the heap of n until its children are no greater. */
static void sift(char *base, size_t i, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	for (;;) {
		size_t big = i, l = 2 * i + 1, r = l + 1;
		if (l < n && cmp(base + l * size, base + big * size) > 0)
			big = l;
		if (r < n && cmp(base + r * size, base + big * size) > 0)
			big = r;
		if (big == i)
			return;
		swap(base + i * size, base + big * size, size);
		i = big;
	}
}

void mpk__sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	char *b = base;

	for (size_t i = n / 2; i-- > 0;)
		sift(b, i, n, size, cmp);
	for (size_t end = n; end > 1; end--) {
		swap(b, b + (end - 1) * size, size);
		sift(b, 0, end - 1, size, cmp);
	}
}
