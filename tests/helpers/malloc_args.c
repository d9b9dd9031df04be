/* SPDX-License-Identifier: MIT */
/*
 * A program of the project's own for mpkit run to start (t_cli_options):
 * dynamically linked, where the VM's sh and echo are static busybox, which
 * mpkit run refuses.  Prints its arguments as echo does, each copied
 * through malloc (the drop-in's); "-e NAME" prints the variable NAME,
 * "-f FILE" the file, as cat does; "-r NAME" the file offsets of the pages
 * of NAME's executable mapping that it has in its page tables
 * (/proc/self/pagemap), one a line (t_malloc_text_resident).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int resident(const char *name)
{
	FILE *maps = fopen("/proc/self/maps", "r");
	int pm = open("/proc/self/pagemap", O_RDONLY);
	long page = sysconf(_SC_PAGESIZE);
	char l[4096];
	int found = 0;

	while (maps && pm >= 0 && fgets(l, sizeof(l), maps)) {
		unsigned long lo, hi, off;
		char perm[8];
		const char *path = strchr(l, '/'), *base = path ? strrchr(path, '/') : NULL;
		if (sscanf(l, "%lx-%lx %7s %lx", &lo, &hi, perm, &off) != 4 || strcmp(perm, "r-xp") || !base ||
		    strncmp(base + 1, name, strlen(name)))
			continue;
		found = 1;
		for (unsigned long a = lo; a < hi; a += page) {
			uint64_t e;
			/* Bit 63: present (readable without privilege). */
			if (pread(pm, &e, sizeof(e), (off_t)(a / page * sizeof(e))) != sizeof(e))
				return 1;
			if (e >> 63)
				printf("%lx\n", a - lo + off);
		}
	}
	return !found || fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "-e")) {
		const char *v = getenv(argv[2]);
		return printf("%s\n", v ? v : "") < 0;
	}
	if (argc == 3 && !strcmp(argv[1], "-f")) {
		FILE *f = fopen(argv[2], "r");
		char *b = malloc(4096);
		size_t n;
		if (!f || !b)
			return 1;
		while ((n = fread(b, 1, 4096, f)))
			fwrite(b, 1, n, stdout);
		free(b);
		return fclose(f) || fflush(stdout);
	}
	if (argc == 3 && !strcmp(argv[1], "-r"))
		return resident(argv[2]);
	for (int i = 1; i < argc; i++) {
		char *a = strdup(argv[i]);
		if (!a)
			return 1;
		printf("%s%s", i > 1 ? " " : "", a);
		free(a);
	}
	return printf("\n") < 0;
}
