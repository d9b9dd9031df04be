/* SPDX-License-Identifier: MIT */
/*
 * A program of the project's own for mpkit run to start (t_cli_options):
 * dynamically linked, where the VM's sh and echo are static busybox, which
 * mpkit run refuses.  Prints its arguments as echo does, each copied
 * through malloc (the drop-in's); "-e NAME" prints the variable NAME.
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
	for (int i = 1; i < argc; i++) {
		char *a = strdup(argv[i]);
		if (!a)
			return 1;
		printf("%s%s", i > 1 ? " " : "", a);
		free(a);
	}
	return printf("\n") < 0;
}
