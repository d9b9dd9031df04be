/* SPDX-License-Identifier: MIT */
/*
 * `mpkit symbolize [FILE...]`, and the filter `mpkit run` puts on its
 * program's reports: each frame line of a report (src/shared/trace.h:
 * "#N ADDR [in SYM] (MODULE+OFF)") becomes its function and FILE:LINE
 * from MODULE's debug information, inlined calls as frames of their own,
 * as addr2line(1) (binutils) reads them; everything else passes as it
 * is.  Out of process, so the library stays libc-only.  Without
 * addr2line, or a module without debug information, a frame stays
 * module+offset.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "trace.h"

/* A file offset in module path as the address its ELF program headers
 * give it (what addr2line takes); false if the file says nothing. */
static bool file_vaddr(const char *path, unsigned long off, unsigned long *vaddr)
{
	Elf64_Ehdr eh;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool ok = false;

	if (fd < 0)
		return false;
	if (pread(fd, &eh, sizeof(eh), 0) == (ssize_t)sizeof(eh) && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
	    eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr)) {
		for (unsigned i = 0; i < eh.e_phnum && !ok; i++) {
			Elf64_Phdr ph;
			if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) != (ssize_t)sizeof(ph))
				break;
			if (ph.p_type == PT_LOAD && off >= ph.p_offset && off < ph.p_offset + ph.p_filesz) {
				*vaddr = off - ph.p_offset + ph.p_vaddr;
				ok = true;
			}
		}
	}
	close(fd);
	return ok;
}

static bool no_addr2line; /* said once */

/* addr2line -f -i -C's answer for addr in path: pairs of lines, function
 * then FILE:LINE, innermost first, into out (NUL-terminated); false if
 * it could not run. */
static bool addr2line(const char *path, unsigned long addr, char *out, size_t size)
{
	char arg[32];
	int p[2];
	size_t len = 0;

	if (no_addr2line || pipe2(p, O_CLOEXEC))
		return false;
	snprintf(arg, sizeof(arg), "%#lx", addr);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return false;
	}
	if (!pid) {
		dup2(p[1], 1);
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0)
			dup2(null, 2);
		execlp("addr2line", "addr2line", "-f", "-i", "-C", "-e", path, arg, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	for (ssize_t k; len + 1 < size && (k = read(p[0], out + len, size - 1 - len)) != 0;) {
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			break;
		len += (size_t)k;
	}
	out[len] = 0;
	close(p[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 127) {
		no_addr2line = true; /* said at the end, not inside a report */
		return false;
	}
	return WIFEXITED(st) && !WEXITSTATUS(st);
}

struct frame_line {
	unsigned n;
	unsigned long addr, off;
	char sym[256], module[512];
};

/* "mpkit:     #N 0xADDR[ in SYM] (MODULE+0xOFF)" */
static bool parse(const char *l, struct frame_line *f)
{
	const char *p = l + strlen(MPK_TRACE_PREFIX), *open, *plus;
	char *end;
	size_t len = strlen(l);

	if (strncmp(l, MPK_TRACE_PREFIX, strlen(MPK_TRACE_PREFIX)) || len < 4 || l[len - 1] != ')')
		return false;
	f->n = (unsigned)strtoul(p, &end, 10);
	if (end == p || *end != ' ')
		return false;
	f->addr = strtoul(end + 1, &end, 16);
	f->sym[0] = 0;
	if (!strncmp(end, " in ", 4)) {
		const char *s = end + 4, *e = strstr(s, " (");
		if (!e || (size_t)(e - s) >= sizeof(f->sym))
			return false;
		memcpy(f->sym, s, (size_t)(e - s));
		f->sym[e - s] = 0;
		end = (char *)e;
	}
	if (strncmp(end, " (", 2))
		return false;
	open = end + 2;
	plus = NULL;
	for (const char *q = open; *q; q++)
		if (q[0] == '+' && q[1] == '0' && q[2] == 'x')
			plus = q; /* the last one: a path may hold a + */
	if (!plus || (size_t)(plus - open) >= sizeof(f->module))
		return false;
	memcpy(f->module, open, (size_t)(plus - open));
	f->module[plus - open] = 0;
	f->off = strtoul(plus + 1, &end, 16);
	return *end == ')' && !end[1];
}

/* One frame line, symbolized where addr2line can; exact: the address is
 * the faulting instruction, not a return address. */
static void frame(FILE *out, const char *line, bool exact)
{
	struct frame_line f;
	unsigned long vaddr;
	char ans[4096];

	if (!parse(line, &f) || !file_vaddr(f.module, f.off, &vaddr) ||
	    !addr2line(f.module, vaddr - !exact, ans, sizeof(ans))) {
		fprintf(out, "%s\n", line);
		return;
	}
	/* Pairs of lines: function, FILE:LINE[ (discriminator N)]. */
	int pairs = 0;
	for (char *fn = strtok(ans, "\n"), *at; fn && (at = strtok(NULL, "\n")); fn = strtok(NULL, "\n")) {
		char *d = strstr(at, " (discriminator");
		if (d)
			*d = 0;
		bool known_fn = strcmp(fn, "??"), known_at = strncmp(at, "??", 2) && !strstr(at, ":?");
		const char *name = known_fn ? fn : f.sym[0] ? f.sym : NULL;
		fprintf(out, MPK_TRACE_PREFIX "%u %#lx", f.n, f.addr);
		if (name)
			fprintf(out, " in %s", name);
		if (known_at)
			fprintf(out, " %s", at);
		else
			fprintf(out, " (%s+%#lx)", f.module, f.off);
		if (pairs++)
			fprintf(out, " (inlined)");
		fputc('\n', out);
	}
	if (!pairs)
		fprintf(out, "%s\n", line);
}

void cli_symbolize_line(FILE *out, const char *line, bool *fault_trace)
{
	if (!strncmp(line, MPK_TRACE_PREFIX, strlen(MPK_TRACE_PREFIX))) {
		frame(out, line, *fault_trace && !strncmp(line, MPK_TRACE_PREFIX "0 ", strlen(MPK_TRACE_PREFIX) + 2));
		return;
	}
	if (!strncmp(line, "mpkit:", 6)) /* a heading: whose frames follow */
		*fault_trace = !strncmp(line, MPK_TRACE_HEAD_FAULT, strlen(MPK_TRACE_HEAD_FAULT));
	fprintf(out, "%s\n", line);
}

void cli_symbolize_end(void)
{
	static bool said;

	if (no_addr2line && !said) {
		said = true;
		fprintf(stderr, "mpkit: addr2line (binutils) cannot be run: the frames above stay module+offset\n");
	}
}

static int symbolize_file(FILE *in, const char *name)
{
	char *line = NULL;
	size_t cap = 0;
	bool fault_trace = false;

	for (ssize_t n; (n = getline(&line, &cap, in)) >= 0;) {
		if (n && line[n - 1] == '\n')
			line[n - 1] = 0;
		cli_symbolize_line(stdout, line, &fault_trace);
	}
	free(line);
	cli_symbolize_end();
	if (ferror(in)) {
		fprintf(stderr, "mpkit symbolize: %s: %s\n", name, strerror(errno));
		return 1;
	}
	return 0;
}

static int cmd_symbolize(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int rc = 0, o;

	while ((o = cli_getopt(&cli_symbolize, argc, argv, "h", longopts)) != -1) {
		if (o == 'h')
			return cli_help(&cli_symbolize);
		return 2;
	}
	if (optind >= argc)
		return cli_finish_output("symbolize", symbolize_file(stdin, "standard input"));
	for (int i = optind; i < argc; i++) {
		FILE *f = strcmp(argv[i], "-") ? fopen(argv[i], "r") : stdin;
		if (!f) {
			fprintf(stderr, "mpkit symbolize: %s: %s\n", argv[i], strerror(errno));
			rc = 1;
			continue;
		}
		rc |= symbolize_file(f, argv[i]);
		if (f != stdin)
			fclose(f);
	}
	return cli_finish_output("symbolize", rc);
}

const struct cli_command cli_symbolize = {
	"symbolize", cmd_symbolize, "[FILE...]",
	"a saved report's frames as functions and FILE:LINE",
	"A saved mpkit report (MPKIT_REPORT=PATH, or stderr) from FILE, or from\n"
	"standard input (FILE -), on standard output with each backtrace frame as\n"
	"its function and FILE:LINE (a program built with -g; addr2line from\n"
	"binutils).  Frames stay as module+offset where a module has no debug\n"
	"information or has changed since.\n"
	"exit status: 0, 1 a FILE cannot be read, 2 usage\n",
};
