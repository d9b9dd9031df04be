/* SPDX-License-Identifier: MIT */
/*
 * calloc through the drop-in returns zeroes after the writes a program can
 * make into memory the heap holds free (t_attack_calloc_stale does it
 * through the heap calls): an overflow into a chunk's never-used tail,
 * and a write through a dangling pointer into a run the heap's decay
 * purged (MADV_DONTNEED), each of a page run the thread caches take
 * (40 KiB) and one they do not (120 KiB); with the metadata open and
 * sealed, on soft and, where the machine has keys, on hw.  malloc-calloc
 * (tests/helpers/malloc_calloc.c) makes each attack in a process of its
 * own.
 */
#include "t_malloc.h"

static char out[8192];

static void attack(const char *backend, const char *meta, const char *what, unsigned size)
{
	char cmd[128], b[64], m[64];
	char *env[] = { b, m, "MPKIT_MALLOC_STATS=1", NULL };

	snprintf(b, sizeof(b), "MPKIT_BACKEND=%s", backend);
	snprintf(m, sizeof(m), "MPKIT_HEAP_META=%s", meta);
	snprintf(cmd, sizeof(cmd), "./malloc-calloc %s %u", what, size);
	int st = t_malloc_sh(cmd, 1, env, out, sizeof(out));
	/* (the stats line may come first: stdout is flushed after it) */
	if (st || (strncmp(out, "zero\n", 5) && !strstr(out, "\nzero\n")))
		t_fail("%s, metadata %s, %s %u: exit %d:\n%s", backend, meta, what, size, st, out);
	t_malloc_report(cmd, "malloc-calloc", !strcmp(meta, "closed") ? "metadata closed" : "metadata open",
			out);
}

int main(void)
{
	static const char *const metas[] = { "open", "closed" };
	static const char *const attacks[] = { "tail", "purged" };
	static const unsigned sizes[] = { 40 << 10, 120 << 10 };

	t_malloc_lib();
	if (access("./malloc-calloc", X_OK))
		t_skip("malloc-calloc is not beside the test (make tests)");
	for (int hw = 0; hw <= (t_backend() == MPK_BACKEND_HW); hw++)
		for (int m = 0; m < 2; m++)
			for (int a = 0; a < 2; a++)
				for (int s = 0; s < 2; s++)
					attack(hw ? "hw" : "soft", metas[m], attacks[a], sizes[s]);
	return t_done();
}
