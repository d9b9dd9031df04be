/* SPDX-License-Identifier: MIT */
/* Preloaded by t_cli_bench_malloc as a stand-in allocator: every program
 * it is loaded into prints a line more, which the benchmark must report
 * as a difference from glibc's output. */
#include <unistd.h>

__attribute__((constructor)) static void noise(void)
{
	static const char line[] = "bench-noise\n";

	if (write(1, line, sizeof(line) - 1) < 0)
		_exit(99);
}
