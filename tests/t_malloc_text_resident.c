/* SPDX-License-Identifier: MIT */
/*
 * A small program under the drop-in has little of libmpkit.so's text
 * resident (issue 33, item 3): malloc-args (tests/helpers/malloc_args.c,
 * dynamically linked where the VM's cat is static busybox) printing its
 * /proc/self/smaps with the drop-in preloaded, the Rss of the library's
 * executable mapping.  The kernel
 * maps a file's pages 64 KiB at a time around the first one a process
 * runs (fault-around): with the functions a start runs scattered through
 * the text, all of it was resident (216 of 216 KiB); placed together
 * (src/libmpkit-hot.ld) they are in at most two such windows, whatever
 * address the library is loaded at.  The test needs text of more than
 * three windows to tell the two apart, and skips on a smaller one, and
 * glibc: on musl a start also primes the unwinder (src/shared/unwind.c),
 * whose code is libgcc's, at the text's end.
 */
#include "t_malloc.h"

static char out[1 << 18];

/* The kernel's fault-around window in KiB: debugfs says it where it is
 * mounted and readable (root); elsewhere the kernel's default, 64 KiB,
 * which only debugfs can change. */
static long window_kib(void)
{
	FILE *f = fopen("/sys/kernel/debug/fault_around_bytes", "r");
	long bytes = 0;

	if (f) {
		if (fscanf(f, "%ld", &bytes) != 1)
			bytes = 0;
		fclose(f);
	}
	return bytes >= 4096 ? bytes / 1024 : 64;
}

int main(void)
{
	char *const env[] = { "MPKIT_HEAP_META=open", NULL };
	long size = -1, rss = -1, window = window_kib();

#ifndef __GLIBC__
	t_skip("the start's functions are placed for glibc (musl's start primes the unwinder)");
#endif
	t_malloc_lib();
	if (access("./malloc-args", X_OK))
		t_skip("malloc-args is not beside the test (make tests)");
	int st = t_malloc_sh("./malloc-args -f /proc/self/smaps", 1, env, out, sizeof(out));
	REQUIRE(st == 0);
	/* The mapping's header line, then its Size: and Rss: lines. */
	for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n")) {
		char perm[8], path[512];
		if (sscanf(l, "%*x-%*x %7s %*s %*s %*s %511s", perm, path) == 2) {
			const char *base = strrchr(path, '/');
			bool ours = base && !strncmp(base, "/libmpkit.so", 12) && !strcmp(perm, "r-xp");
			if (ours)
				size = rss = 0;
			else if (size >= 0 && rss > 0)
				break; /* the next mapping: ours is read */
			continue;
		}
		if (size == 0 && !strncmp(l, "Size:", 5))
			size = atol(l + 5);
		else if (size > 0 && rss == 0 && !strncmp(l, "Rss:", 4))
			rss = atol(l + 4);
	}
	if (size < 0)
		t_fail("no r-xp mapping of libmpkit.so in malloc-args' smaps:\n%.2000s", out);
	else if (size <= 3 * window)
		t_skip("libmpkit.so's text is too small to tell (3 fault-around windows or less)");
	else if (rss > 2 * window)
		t_fail("libmpkit.so's text: %ld of %ld KiB resident in malloc-args, want at most %ld (two %ld KiB "
		       "fault-around windows)", rss, size, 2 * window, window);
	printf("libmpkit.so's text: %ld of %ld KiB resident in malloc-args under the drop-in\n", rss, size);
	return t_done();
}
