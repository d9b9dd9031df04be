/*
 * What a malloc+free pair of a small block costs with the metadata sealed
 * against open, counted by single-stepping it (the trap flag: a SIGTRAP
 * after each instruction, whose handler reads the next one): instructions,
 * WRPKRU and system calls.  Open (the thread holds RW to the heap's
 * domain), the pair is the thread cache's fast path: no WRPKRU, no system
 * call.  Sealed, each call opens and closes the metadata: on hw 2 WRPKRU a
 * call, 4 a pair, and no system call; on soft 2 mprotect() a call (a
 * debugging mode).  The figures (the fewest of 8 pairs, after a warm-up)
 * are printed for docs/heaps.md.  Under TSan, which holds signals back,
 * skipped.
 */
#define _GNU_SOURCE
#include <ucontext.h>

#include "helpers/step_count.h"
#include "t_heap.h"

/* One pair, stepped: its counts. */
static void pair(mpk_heap *h, long out[3])
{
	STEP_START();
	void *p = mpk_heap_malloc(h, 48);
	int rc = mpk_heap_free(h, p);
	step_stop();
	REQUIRE(p && rc == 0);
	out[0] = steps;
	out[1] = wrpkru;
	out[2] = syscalls;
}

static int mode(void *arg)
{
	const char *meta = arg;
	struct sigaction sa = { .sa_sigaction = step_trap, .sa_flags = SA_SIGINFO };
	long best[3] = { 0, 0, 0 }, got[3];

	setenv("MPKIT_HEAP_META", meta, 1);
	REQUIRE(sigaction(SIGTRAP, &sa, NULL) == 0);
	mpk_domain *d = mpk_domain_create("heap-cost", MPK_RW, 0);
	REQUIRE(d);
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h && mpk_set(d, MPK_RW) == 0);
	for (int i = 0; i < 1000; i++)
		REQUIRE(mpk_heap_free(h, mpk_heap_malloc(h, 48)) == 0);
	for (int i = 0; i < 8; i++) {
		pair(h, got);
		if (!i || got[0] < best[0])
			memcpy(best, got, sizeof(best));
	}
	bool hw = mpk_backend() == MPK_BACKEND_HW, sealed = !strcmp(meta, "closed");
	printf("t_heap_cost: metadata %s, backend %s: %ld instructions, %ld WRPKRU, %ld system calls per malloc+free\n",
	       meta, hw ? "hw" : "soft", best[0], best[1], best[2]);
	int bad = 0;
	if (!sealed)
		bad = best[1] != 0 || best[2] != 0;
	else if (hw)
		bad = best[1] != 4 || best[2] != 0;
	else
		bad = best[1] != 0 || best[2] != 4;
	if (bad)
		fprintf(stderr, "metadata %s: want %s\n", meta,
			!sealed ? "no WRPKRU and no system call" : hw ? "4 WRPKRU" : "4 system calls");
	CHECK(mpk_heap_destroy(h) == 0 && mpk_domain_destroy(d) == 0);
	return bad || t_done() != 0;
}

int main(void)
{
#ifdef __SANITIZE_THREAD__
	t_skip("TSan holds signals back: no single-stepping");
#endif
	t_backend();
	CHECK(t_child_status(mode, "open") == 0);
	CHECK(t_child_status(mode, "closed") == 0);
	return t_done();
}
