/* SPDX-License-Identifier: MIT */
/*
 * The allocation calls' edge cases, one line each: what a call returned
 * (NULL or not), errno, and the checks a block must pass (alignment,
 * usable size, zeroed, contents kept).  t_malloc_edge runs it under
 * glibc and under libmpkit-malloc.so and wants the same lines.  The first
 * line says whose malloc() it got, and is left out of the comparison.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A failed realloc leaves the block: reading it after is the point. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif

/* Opaque to the compiler, so that it keeps calls it could fold. */
static volatile size_t big = SIZE_MAX, half = SIZE_MAX / 2 + 2;
/* Bad alignments through memory: clang 14 crashes on a constant one. */
static volatile size_t a48 = 48, a0 = 0;

static void show(const char *what, const void *p, size_t align, size_t size)
{
	int err = errno;

	printf("%-34s %s errno=%d", what, p ? "block" : "NULL", p ? 0 : err);
	if (p) {
		printf(" aligned=%d usable>=size=%d", align ? (uintptr_t)p % align == 0 : 1,
		       malloc_usable_size((void *)p) >= size);
	}
	printf("\n");
	errno = 0;
}

int main(void)
{
	Dl_info di;
	void *p, *q;
	int rc;

	printf("malloc from: %s\n", dladdr((void *)malloc, &di) && di.dli_fname ? di.dli_fname : "?");
	errno = 0;
	p = malloc(0); show("malloc(0)", p, 16, 0); free(p);
	p = malloc(1); show("malloc(1)", p, 16, 1); free(p);
	p = malloc(big); show("malloc(SIZE_MAX)", p, 0, 0);
	p = malloc(PTRDIFF_MAX); show("malloc(PTRDIFF_MAX)", p, 0, 0);
	p = calloc(big / 2, 4); show("calloc overflow", p, 0, 0);
	p = calloc(0, 8); show("calloc(0, 8)", p, 16, 0); free(p);
	p = calloc(1000, 100); show("calloc(1000, 100)", p, 16, 100000);
	int zero = 1;
	for (size_t i = 0; i < 100000; i++)
		zero &= ((char *)p)[i] == 0;
	printf("calloc zeroed=%d\n", zero);
	free(p);
	/* A reused block must come back zeroed too. */
	p = malloc(4000); memset(p, 0xa5, 4000); free(p);
	p = calloc(1, 4000); show("calloc(1, 4000) after a free", p, 16, 4000);
	zero = 1;
	for (size_t i = 0; i < 4000; i++)
		zero &= ((char *)p)[i] == 0;
	printf("calloc reused zeroed=%d\n", zero);
	free(p);

	p = realloc(NULL, 10); show("realloc(NULL, 10)", p, 16, 10);
	memcpy(p, "0123456789", 10);
	q = realloc(p, 100000); show("realloc grow", q, 16, 100000);
	printf("realloc kept=%d\n", q && !memcmp(q, "0123456789", 10));
	p = realloc(q, big); show("realloc(p, SIZE_MAX)", p, 0, 0);
	printf("old block kept=%d\n", !memcmp(q, "0123456789", 10));
	p = realloc(q, 0); show("realloc(p, 0)", p, 0, 0);
	p = realloc(NULL, 0); show("realloc(NULL, 0)", p, 16, 0); free(p);

	p = reallocarray(NULL, 10, 10); show("reallocarray(NULL, 10, 10)", p, 16, 100);
	q = reallocarray(p, big / 2, 3); show("reallocarray overflow", q, 0, 0);
	q = reallocarray(p, 0, 10); show("reallocarray(p, 0, 10)", q, 0, 0);

	for (size_t a = 1; a <= ((size_t)1 << 21); a <<= 1) {
		char what[64];
		snprintf(what, sizeof(what), "memalign(%zu, 100)", a);
		p = memalign(a, 100); show(what, p, a, 100); free(p);
	}
	p = memalign(a48, 100); show("memalign(48, 100)", p, 64, 100); free(p);
	p = memalign(a0, 100); show("memalign(0, 100)", p, 16, 100); free(p);
	p = memalign(half, 100); show("memalign(SIZE_MAX/2+2, 100)", p, 0, 0);
	p = memalign(64, big); show("memalign(64, SIZE_MAX)", p, 0, 0);

	p = aligned_alloc(64, 128); show("aligned_alloc(64, 128)", p, 64, 128); free(p);
	p = aligned_alloc(4096, 4096); show("aligned_alloc(4096, 4096)", p, 4096, 4096); free(p);
	p = aligned_alloc(64, 0); show("aligned_alloc(64, 0)", p, 64, 0); free(p);
	p = aligned_alloc(64, big); show("aligned_alloc(64, SIZE_MAX)", p, 0, 0);

	static const size_t pm[] = { 0, 1, 4, 8, 12, 24, 32, 64, 4096, (size_t)1 << 20 };
	for (size_t i = 0; i < sizeof(pm) / sizeof(*pm); i++) {
		p = (void *)1;
		errno = 1234;
		rc = posix_memalign(&p, pm[i], 100);
		printf("posix_memalign(%zu, 100) rc=%d errno=%d %s", pm[i], rc, errno,
		       rc ? (p == (void *)1 ? "untouched" : "changed") : "block");
		if (!rc) {
			printf(" aligned=%d", (uintptr_t)p % pm[i] == 0);
			free(p);
		}
		printf("\n");
	}
	errno = 0;
	p = (void *)1;
	rc = posix_memalign(&p, 64, big);
	printf("posix_memalign(64, SIZE_MAX) rc=%d %s\n", rc, p == (void *)1 ? "untouched" : "changed");
	errno = 0;

	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	p = valloc(10); show("valloc(10)", p, page, 10); free(p);
	p = valloc(0); show("valloc(0)", p, page, 0); free(p);
#ifdef __GLIBC__ /* glibc's only */
	p = pvalloc(10); show("pvalloc(10)", p, page, page); free(p);
	p = pvalloc(0); show("pvalloc(0)", p, page, 0); free(p);
	p = pvalloc(big - 10); show("pvalloc(SIZE_MAX - 10)", p, 0, 0);
#endif

	printf("malloc_usable_size(NULL)=%zu\n", malloc_usable_size(NULL));
	errno = 77;
	free(NULL);
	p = malloc(10);
	errno = 77;
	free(p);
	printf("free keeps errno=%d\n", errno == 77);
	errno = 0;
	p = malloc(100);
	printf("malloc success errno=%d\n", errno);
	free(p);
	return 0;
}
