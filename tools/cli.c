/* SPDX-License-Identifier: MIT */
/* What the mpkit command's subcommands share: options, help, output, helpers. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

void cli_usage(const struct cli_command *c, FILE *f)
{
	fprintf(f, "usage: mpkit %s%s%s\n%s", c->name, *c->synopsis ? " " : "", c->synopsis, c->help);
}

int cli_help(const struct cli_command *c)
{
	cli_usage(c, stdout);
	return cli_finish_output(c->name, 0);
}

int cli_getopt(const struct cli_command *c, int argc, char **argv, const char *shortopts,
	       const struct option *longopts)
{
	char opts[64];
	int plus = *shortopts == '+';

	/* ':' after getopt's '+': a missing value is told from an unknown option */
	snprintf(opts, sizeof(opts), "%s:%s", plus ? "+" : "", shortopts + plus);
	opterr = 0;
	int o = getopt_long(argc, argv, opts, longopts, NULL);
	if (o != '?' && o != ':')
		return o;
	const char *arg = argv[optind - 1], *sp = *c->name ? " " : "";
	if (o == ':')
		fprintf(stderr, "mpkit%s%s: %s needs a value\n", sp, c->name, arg);
	else if (optopt && !strncmp(arg, "--", 2) && strchr(arg, '='))
		fprintf(stderr, "mpkit%s%s: %.*s takes no value\n", sp, c->name, (int)strcspn(arg, "="), arg);
	else if (optopt && strncmp(arg, "--", 2))
		fprintf(stderr, "mpkit%s%s: unknown option '-%c'\n", sp, c->name, optopt);
	else
		fprintf(stderr, "mpkit%s%s: unknown option '%s'\n", sp, c->name, arg);
	fprintf(stderr, "usage: mpkit%s%s%s%s (mpkit %s%s)\n", sp, c->name, *c->synopsis ? " " : "", c->synopsis,
		*c->name ? "help " : "--help", c->name);
	return '?';
}

int cli_conflict(const struct cli_command *c, const char *a, const char *b)
{
	fprintf(stderr, "mpkit %s: %s and %s contradict each other: give one\n", c->name, a, b);
	return 2;
}

/* stdout reached its destination: a write error (a full disk, a closed
 * pipe, /dev/full) is a failure of the command. */
int cli_output_ok(const char *cmd)
{
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "mpkit%s%s: writing the output failed: %s\n", *cmd ? " " : "", cmd,
			strerror(errno ? errno : EIO));
		return 0;
	}
	return 1;
}

int cli_finish_output(const char *cmd, int rc)
{
	return cli_output_ok(cmd) ? rc : 1;
}

int cli_helper(const char *cmd, const char *name, char *path, size_t size)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0) {
		fprintf(stderr, "mpkit %s: /proc/self/exe: %s\n", cmd, strerror(errno));
		return -1;
	}
	self[n] = 0;
	*strrchr(self, '/') = 0; /* the kernel gives an absolute path */
	if (!strcmp(cli_libexec, "."))
		snprintf(path, size, "%s/%s", self, name);
	else
		snprintf(path, size, "%s/%s/%s", self, cli_libexec, name);
	if (!access(path, F_OK))
		return 0;
	fprintf(stderr, "mpkit %s: %s not found (%s)\n", cmd, path,
		strcmp(cli_libexec, ".") ? "install mpkit again"
		: strncmp(name, "mpkit-bench", 11) ? "build it with `make`" : "build it with `make benchmarks`");
	return -1;
}
