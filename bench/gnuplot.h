/* SPDX-License-Identifier: MIT */
/* gnuplot for the benchmarks' plots (bench/gnuplot.c). */
#ifndef MPKIT_BENCH_GNUPLOT_H
#define MPKIT_BENCH_GNUPLOT_H

#include <stddef.h>
#include <stdio.h>

struct bench_gnuplot {
	int found;          /* an executable "gnuplot" is on PATH */
	char exe[1024];     /* its path */
	char version[128];  /* "gnuplot 5.4 patchlevel 4" */
	char why[1400];     /* why it cannot be used, for the user */
};

/* A usable gnuplot (5.0 or later) on PATH: 0, or -1 and g->why. */
int bench_gnuplot_find(struct bench_gnuplot *g);

/* Draws into path: write_input(dat, gp, arg) writes the data and the
 * script (which reads dat and writes SVG on stdout) in a temporary
 * directory, then gnuplot runs.  0; -1 with why (gnuplot failed or its
 * input could not be written); -2 with errno when only the copy to path
 * failed (path is written only once gnuplot succeeded). */
int bench_gnuplot_draw(const char *path, const struct bench_gnuplot *g,
		       int (*write_input)(const char *dat, const char *gp, const void *arg), const void *arg, char *why,
		       size_t len);

/* A gnuplot string literal of s (single-quoted). */
void bench_gnuplot_quote(FILE *f, const char *s);

/* An executable file name on PATH, searched the way execvp() would (no
 * PATH: the system default), that accept (if not NULL) takes: 0 and its
 * path in out, or -1. */
int bench_find_on_path(const char *name, char *out, size_t len, int (*accept)(const char *path));

/* path is a program, not a script that runs one (pyenv's shims are
 * shell scripts: a preload would go under the shell too): for
 * bench_find_on_path's accept. */
int bench_not_script(const char *path);

/* name beside this program (in the build tree, in the installed
 * helpers' directory) into path: 0, or -1 when /proc/self/exe is not
 * there (path is then name alone). */
int bench_beside_me(const char *name, char *path, size_t len);

/* A wait status (or -1, errno) in words: "exit status 1", "killed by
 * signal 9, Killed". */
const char *bench_status_str(int status, char *buf, size_t len);

#endif
