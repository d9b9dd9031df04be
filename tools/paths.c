/* SPDX-License-Identifier: MIT */
/*
 * Where the mpkit command finds its helpers (the benchmarks and
 * libmpkit-watch.so), relative to the directory that holds it.  In the
 * build tree they are beside it; make install compiles this file again
 * with MPKIT_LIBEXEC set to the installed layout (from BINDIR to
 * LIBEXECDIR/mpkit: ../libexec/mpkit by default).
 */
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
