/* SPDX-License-Identifier: MIT */
/*
 * mpk_guard_library(): `mpkit guard --lib NAME` (docs/guard.md) from
 * inside a program that links mpkit.  The guard's machinery (the export
 * patcher, the gate, the fault line naming what was written) stays in
 * libmpkit-guard.so, which links this library: opened here with dlopen()
 * and called through the one entry point it exports, so that libmpkit
 * keeps no decoder of its own and stays libc-only.
 *
 * The helper: one already in the process (`mpkit guard` preloaded it),
 * else MPKIT_GUARD_HELPER (the variable `mpkit guard` takes too), else
 * MPKIT_GUARD_REL from this library's own directory (LIBDIR to
 * LIBEXECDIR/mpkit, set by the Makefile for the installed layout), else
 * beside it (the build tree).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/core.h"

#ifndef MPKIT_GUARD_REL
#define MPKIT_GUARD_REL "."
#endif
#define HELPER "libmpkit-guard.so"
#define ENTRY "mpkit_guard_api" /* tools/guard_preload.c */

typedef int (*guard_entry)(const char *name, unsigned flags);

static void *open_helper(void)
{
	const int mode = RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE;
	const char *env = secure_getenv("MPKIT_GUARD_HELPER");
	char path[PATH_MAX + sizeof(MPKIT_GUARD_REL) + sizeof(HELPER)];
	Dl_info self;
	void *h;

	if (env && *env)
		return dlopen(env, mode);
	if (!dladdr((void *)mpk_guard_library, &self) || !self.dli_fname || !strrchr(self.dli_fname, '/'))
		return NULL;
	int dir = (int)(strrchr(self.dli_fname, '/') - self.dli_fname);
	snprintf(path, sizeof(path), "%.*s/%s/%s", dir, self.dli_fname, MPKIT_GUARD_REL, HELPER);
	if ((h = dlopen(path, mode)))
		return h;
	snprintf(path, sizeof(path), "%.*s/%s", dir, self.dli_fname, HELPER);
	return dlopen(path, mode);
}

MPK_EXPORT int mpk_guard_library(const char *name, unsigned flags)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	guard_entry entry;
	int rc = -1;

	if (!name || !*name || (flags & ~(unsigned)(MPK_GUARD_DENY_ALL | MPK_GUARD_REPORT))) {
		errno = EINVAL;
		return -1;
	}
	/* The helper links libmpkit.so: linked statically, this would be a
	 * second mpkit in the process (two registries, two fault handlers). */
	if (dlsym(RTLD_DEFAULT, "mpk_guard_library") != (void *)mpk_guard_library) {
		errno = ENOTSUP;
		return -1;
	}
	pthread_mutex_lock(&lock);
	*(void **)&entry = dlsym(RTLD_DEFAULT, ENTRY);
	if (!entry) {
		void *h = open_helper();
		if (h)
			*(void **)&entry = dlsym(h, ENTRY);
	}
	if (entry)
		rc = entry(name, flags);
	else
		errno = ENOTSUP;
	pthread_mutex_unlock(&lock);
	return rc;
}
