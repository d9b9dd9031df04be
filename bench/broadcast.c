/* SPDX-License-Identifier: MIT */
/*
 * mpkit-bench-broadcast: what one broadcast (the all-thread PKRU rewrite
 * behind mpk_set_all(), revocation and eviction) costs with 1..16 other
 * threads blocked in read(), and how many signals and system calls it
 * makes.  On a machine without keys the protocol runs with its frame edit
 * stubbed (mpk__broadcast_stub): signals, handlers, futex acknowledgements
 * and the registry are real, only the XSAVE edit is skipped.
 *
 *   known     every thread has called mpkit (it is in the registry);
 *   unknown   threads that never called mpkit, first broadcast: the
 *             kernel counts more threads than the registry holds, so it
 *             scans /proc/self/task (each thread then registers itself);
 *   held      known threads that hold the target already: a broadcast
 *             leaves them alone (hw; the stub signals everyone), so this
 *             counts its signals and system calls when nobody must change.
 *
 * The first two rows signal every thread (mpk__broadcast_noskip): the
 * cost of reaching a thread that must change.
 *
 * Medians of RUNS runs; per-thread cost is the total over the thread count.
 *
 *   mpkit-bench-broadcast [--smoke]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include <mpkit.h>

#include "bcast.h"
#include "options.h"

int main(int argc, char **argv)
{
	static const int counts[] = { 1, 2, 4, 8, 16 };
	int smoke = 0, rc = bench_smoke_options(argv[0], "One broadcast to 1-16 threads: time, signals, system calls.\n", argc,
						argv, &smoke);
	int iters = smoke ? 20 : 200;

	if (rc >= 0)
		return rc;

	if (mpk_init())
		return 1;
	mpk__broadcast_stub(mpk_backend() != MPK_BACKEND_HW);
	printf("broadcast, backend %s%s; other threads blocked in read()\n",
	       mpk_backend_name(mpk_backend()),
	       mpk_backend() != MPK_BACKEND_HW ? " (frame edit stubbed)" : "");
	printf("%7s %10s %10s %9s %9s %9s %12s %9s %9s %9s\n", "threads", "us/bcast", "us/thread",
	       "signals", "syscalls", "scans", "first(scan)", "ratio", "held:sig", "held:sys");
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		struct bench_bcast r;
		if (bench_bcast_measure(counts[i], iters, 9, &r))
			return 1;
		printf("%7d %10.2f %10.2f %9.2f %9.2f %9.2f %12.2f %8.1fx %9.2f %9.2f\n", counts[i],
		       r.us, r.us / counts[i], r.signals, r.syscalls, r.scans, r.first_us,
		       r.first_us / r.us, r.held_signals, r.held_syscalls);
	}
	printf("signals, syscalls, scans: per broadcast, by the broadcasting thread;\n"
	       "each target also makes rt_sigreturn, and the last one a futex wake.\n"
	       "first(scan): the first broadcast to threads that never called mpkit (us),\n"
	       "ratio: first(scan) / us/bcast;\n"
	       "held:sig, held:sys: per broadcast when every thread holds the target already\n");
	return 0;
}
