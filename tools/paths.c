/* SPDX-License-Identifier: MIT */
/*
 * Where the mpkit command finds its helpers (the benchmarks and
 * libmpkit-watch.so), relative to the directory that holds it.  In the
 * build tree they are beside it; make install compiles this file again
 * with MPKIT_LIBEXEC set to the installed layout (from BINDIR to
 * LIBEXECDIR/mpkit: ../libexec/mpkit by default).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#ifndef MPKIT_LIBEXEC
#define MPKIT_LIBEXEC "."
#endif

/* Where the documents are: the source's docs/ in a build, DOCDIR once
 * installed. */
#ifndef MPKIT_DOCDIR
#define MPKIT_DOCDIR "docs"
#endif

const char cli_libexec[] = MPKIT_LIBEXEC;
const char cli_docdir[] = MPKIT_DOCDIR;

const char *cli_helper_dir(char *buf, size_t size)
{
	char self[PATH_MAX], dir[PATH_MAX + sizeof(MPKIT_LIBEXEC) + 1], *slash;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0 || size < PATH_MAX)
		return cli_libexec;
	self[n] = 0;
	slash = strrchr(self, '/');
	if (slash)
		*slash = 0;
	snprintf(dir, sizeof(dir), "%s/%s", self, cli_libexec);
	/* A relative path says nothing to a user: resolved where it is there. */
	return realpath(dir, buf) ? buf : cli_libexec;
}
