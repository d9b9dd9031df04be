/* SPDX-License-Identifier: MIT */
/*
 * The drop-in allocator (libmpkit-malloc.so) has glibc's semantics at
 * every entry point's edges: malloc-edge (tests/helpers/malloc_edge.c)
 * prints, per call, NULL or a block, errno, alignment and usable size;
 * run under glibc and with the drop-in preloaded, the lines must be the
 * same (realloc(p, 0) frees and returns NULL, calloc overflow is ENOMEM,
 * posix_memalign's EINVAL leaves errno and *p alone, memalign rounds a
 * bad alignment up, malloc_usable_size(NULL) is 0, free keeps errno), and
 * the preloaded run must have got the drop-in's malloc().  With another C
 * library (musl) the lines where it differs from glibc are glibc's.
 */
#include "t_malloc.h"

static char plain[65536], pre[65536];

#ifndef __GLIBC__
/* Where another C library answers otherwise, the drop-in still gives
 * glibc's answer (musl: realloc(p, 0) returns a block, memalign()
 * refuses a bad alignment with EINVAL): the plain run's lines are made
 * glibc's here, each only once the line is found. */
static void as_glibc(char *out)
{
	static const char *const glibc[] = {
		"realloc(p, 0)                      NULL errno=0",
		"reallocarray(p, 0, 10)             NULL errno=0",
		"memalign(48, 100)                  block errno=0 aligned=1 usable>=size=1",
	};
	static char buf[sizeof(plain)];

	for (size_t i = 0; i < sizeof(glibc) / sizeof(*glibc); i++) {
		size_t call = 35; /* the call's column, "%-34s " */
		char *at = out;
		while ((at = strstr(at, "\n")) && strncmp(at + 1, glibc[i], call))
			at++;
		if (!at)
			continue; /* missing: the comparison says so */
		at++;
		size_t len = strcspn(at, "\n");
		snprintf(buf, sizeof(buf), "%s%s", glibc[i], at + len);
		snprintf(at, sizeof(plain) - (size_t)(at - out), "%s", buf);
	}
}
#endif

int main(void)
{
	t_malloc_lib();
	if (access("./malloc-edge", X_OK))
		t_skip("malloc-edge is not beside the test (make tests)");
	int a = t_malloc_sh("./malloc-edge", 0, NULL, plain, sizeof(plain));
	int b = t_malloc_sh("./malloc-edge", 1, NULL, pre, sizeof(pre));
	if (a || b)
		t_fail("malloc-edge: exit %d plain, %d preloaded:\n%s", a, b, pre);
#ifndef __GLIBC__
	as_glibc(plain);
#endif
	char *p1 = strchr(plain, '\n'), *p2 = strchr(pre, '\n');
	REQUIRE(p1 && p2);
	if (strstr(plain, "libmpkit-malloc") > p1 || !strstr(pre, "libmpkit-malloc") || strstr(pre, "libmpkit-malloc") > p2)
		t_fail("the preloaded run did not get the drop-in's malloc:\n%.*s", (int)(p2 - pre), pre);
	if (strcmp(p1, p2)) {
		/* The first line that differs. */
		char *x = p1, *y = p2;
		while (*x && *x == *y)
			x++, y++;
		while (x > p1 && x[-1] != '\n')
			x--, y--;
		t_fail("glibc and the drop-in differ:\nglibc:   %.*s\ndrop-in: %.*s", (int)strcspn(x, "\n"), x,
		       (int)strcspn(y, "\n"), y);
	}
	return t_done();
}
