/* SPDX-License-Identifier: MIT */
/* Where jemalloc's and mimalloc's libraries are, for the benchmarks that
 * run themselves again with one preloaded (alloc, rss). */
#ifndef MPK_BENCH_EXTLIB_H
#define MPK_BENCH_EXTLIB_H

#include <stdio.h>
#include <unistd.h>

/* soname's path in the usual library directories, in buf; NULL if it is
 * not installed. */
static inline const char *bench_lib_path(const char *soname, char *buf, size_t size)
{
	static const char *const dirs[] = { "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
					    "/usr/lib64", "/usr/lib", "/usr/local/lib" };

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(buf, size, "%s/%s", dirs[i], soname);
		if (!access(buf, R_OK))
			return buf;
	}
	return NULL;
}

#endif
