/* SPDX-License-Identifier: MIT */
/*
 * A program that opens libguardtest.so with dlopen() (from its own
 * directory), after main() has started, and calls it through dlsym()
 * pointers (t_guard_cli: `mpkit guard` guards a library when dlopen()
 * brings it).  "write" then stores into the library's state through the
 * pointer it hands out; "close" closes it and calls it again through the
 * old pointer (the guard keeps the library loaded).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);

	if (n <= 0)
		return 1;
	path[n] = 0;
	strcpy(strrchr(path, '/') + 1, "libguardtest.so");
	void *h = dlopen(path, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	long (*add)(long), *(*ptr)(void);
	*(void **)&add = dlsym(h, "g_add");
	*(void **)&ptr = dlsym(h, "g_ptr");
	if (!add || !ptr)
		return 1;
	long one = add(1), three = add(2);
	printf("dlopen %ld %ld\n", one, three);
	fflush(stdout);
	if (argc > 1 && !strcmp(argv[1], "write")) {
		*ptr() = 7;
		printf("wrote %ld\n", *ptr());
	}
	if (argc > 1 && !strcmp(argv[1], "close")) {
		if (dlclose(h))
			return 1;
		printf("after dlclose %ld\n", add(4));
	}
	return 0;
}
