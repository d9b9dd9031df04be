/* SPDX-License-Identifier: MIT */
/*
 * A program of the project's own for mpkit run to start (t_cli_options):
 * dynamically linked, where the VM's sh and echo are static busybox, which
 * mpkit run refuses.  Prints its arguments as echo does, each copied
 * through malloc (the drop-in's); "-e NAME" prints the variable NAME,
 * "-f FILE" the file, as cat does (t_malloc_text_resident: its own smaps).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	for (int i = 1; i < argc; i++) {
		char *a = strdup(argv[i]);
		if (!a)
			return 1;
		printf("%s%s", i > 1 ? " " : "", a);
		free(a);
	}
	return printf("\n") < 0;
}
