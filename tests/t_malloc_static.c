/* SPDX-License-Identifier: MIT */
/*
 * malloc-stress (see t_malloc_threads) linked statically with the drop-in
 * allocator (malloc-stress-static: the VM has no C library to preload
 * into), with the default metadata mode: on hw that must be closed, and
 * with small blocks (its "small" mix: threads that exit while others
 * allocate, forks) at most 2.5 metadata opens per counted call: sealed,
 * every heap call opens once (no thread cache), and the drop-in counts
 * the calls that allocate, not the frees.  The figures are
 * printed for both mixes, the full one (page runs and blocks of their own
 * up to 200 KB) included.
 */
#include "t_malloc.h"

static char out[65536];

int main(void)
{
	static const char *const mixes[] = { "./malloc-stress-static small", "./malloc-stress-static" };

	if (access("./malloc-stress-static", X_OK))
		t_skip("malloc-stress-static is not beside the test (make tests)");
	for (int i = 0; i < 2; i++) {
		char *env[] = { "MPKIT_HEAP_META", "MPKIT_MALLOC_STATS=1", NULL };
		int st = t_malloc_sh(mixes[i], 0, env, out, sizeof(out));
		if (st || !strstr(out, "ok\n"))
			t_fail("%s: exit %d:\n%s", mixes[i], st, out);
		int hw = strstr(out, "backend hw") != NULL;
		double opc = t_malloc_report(mixes[i], "malloc-stress-static", hw ? "metadata closed" : NULL, out);
		if (hw && i == 0 && opc > 2.5)
			t_fail("%s: %.4f metadata opens per call on hw, want at most 2.5", mixes[i], opc);
	}
	return t_done();
}
