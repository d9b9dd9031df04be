/* SPDX-License-Identifier: MIT */
/*
 * The drop-in allocator (libmpkit-malloc.so) has glibc's semantics at
 * every entry point's edges: malloc-edge (tests/helpers/malloc_edge.c)
 * prints, per call, NULL or a block, errno, alignment and usable size;
 * run under glibc and with the drop-in preloaded, the lines must be the
 * same (realloc(p, 0) frees and returns NULL, calloc overflow is ENOMEM,
 * posix_memalign's EINVAL leaves errno and *p alone, memalign rounds a
 * bad alignment up, malloc_usable_size(NULL) is 0, free keeps errno), and
 * the preloaded run must have got the drop-in's malloc().
 */
#include "t_malloc.h"

static char plain[65536], pre[65536];

int main(void)
{
	t_malloc_lib();
	if (access("./malloc-edge", X_OK))
		t_skip("malloc-edge is not beside the test (make tests)");
	int a = t_malloc_sh("./malloc-edge", 0, NULL, plain, sizeof(plain));
	int b = t_malloc_sh("./malloc-edge", 1, NULL, pre, sizeof(pre));
	if (a || b)
		t_fail("malloc-edge: exit %d plain, %d preloaded:\n%s", a, b, pre);
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
