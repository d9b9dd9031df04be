/* SPDX-License-Identifier: MIT */
/*
 * The drop-in allocator under threads: malloc-stress
 * (tests/helpers/malloc_stress.c) starts rounds of threads that allocate,
 * check and free blocks of 1 B to 200 KB, hand blocks to the next round
 * and exit while the next round allocates (each exit flushes a thread
 * cache), and forks from a thread while others allocate (the child
 * allocates too).  With libmpkit-malloc.so preloaded, metadata open and
 * closed, it must print "ok" and exit 0; a deadlock at thread exit or in
 * the child is the test runner's timeout.  MPKIT_MALLOC_STATS=1 must give
 * the drop-in's report, of the mode asked for.
 */
#include "t_malloc.h"

static char out[65536];

int main(void)
{
	static const char *const modes[] = { "MPKIT_HEAP_META=open", "MPKIT_HEAP_META=closed" };

	t_malloc_lib();
	if (access("./malloc-stress", X_OK))
		t_skip("malloc-stress is not beside the test (make tests)");
	for (int i = 0; i < 2; i++) {
		char *env[] = { (char *)modes[i], "MPKIT_MALLOC_STATS=1", NULL };
		int st = t_malloc_sh("./malloc-stress", 1, env, out, sizeof(out));
		if (st || !strstr(out, "ok\n"))
			t_fail("%s: malloc-stress exit %d:\n%s", modes[i], st, out);
		t_malloc_report(modes[i], "malloc-stress", i ? "metadata closed" : "metadata open", out);
	}
	return t_done();
}
