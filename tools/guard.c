/* SPDX-License-Identifier: MIT */
/*
 * `mpkit guard --lib NAME[,OPTION...]... [--deny write|all] [--heap] [--]
 * PROG ARGS`: PROG with libmpkit-guard.so preloaded
 * (tools/guard_preload.c), which puts each library NAME's data in a
 * domain of its own, writable only inside that library's exported
 * functions (docs/guard.md); a library's OPTIONs (deny=, heap, out=,
 * keep=) over the global ones.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "guard_opts.h"

static int cmd_guard(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "lib", required_argument, NULL, 'l' },
		{ "deny", required_argument, NULL, 'd' },
		{ "report", no_argument, NULL, 'r' },
		{ "heap", no_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *deny = "write";
	char libs[4096] = ""; /* NAME[,OPTION...]:NAME..., MPKIT_GUARD_LIB */
	char needs_heap[4096] = ""; /* a library with out=/keep= that leaves heap to --heap */
	size_t used = 0;
	int o, report = 0, heap = 0, nlib = 0, bad = 0;

	/* "+": PROG's own options are PROG's. */
	while ((o = cli_getopt(&cli_guard, argc, argv, "+l:d:rHh", longopts)) != -1) {
		switch (o) {
		case 'l': {
			char name[4096];
			struct guard_opts lo;
			snprintf(name, sizeof(name), "%s", optarg);
			const char *word = guard_opts_parse(name, &lo);
			if (word && lo.why) {
				fprintf(stderr, "mpkit guard: --lib %s: bad option '%s' (%s)\n", name, word, lo.why);
				return 2;
			}
			if (word) {
				fprintf(stderr, "mpkit guard: --lib %s: unknown option '%s' (it takes %s)\n", name,
					word, GUARD_OPTS_WORDS);
				return 2;
			}
			/* out= and keep= choose among heap blocks: without heap they
			 * would say nothing, which the user did not mean. */
			if (lo.nrules && !lo.heap) {
				fprintf(stderr, "mpkit guard: --lib %s: out= and keep= need heap, not noheap\n", name);
				return 2;
			}
			if (lo.nrules && lo.heap < 0 && !*needs_heap)
				snprintf(needs_heap, sizeof(needs_heap), "%s", name);
			if (!*name || strchr(name, '/') || strchr(name, ':')) {
				bad = 1;
				break;
			}
			/* The helper's entry: the name, and what it says of its own. */
			if (++nlib > 8 || used + strlen(optarg) + 32 > sizeof(libs)) {
				fprintf(stderr, "mpkit guard: 8 --lib at most\n");
				return 2;
			}
			used += (size_t)snprintf(libs + used, sizeof(libs) - used, "%s%s%s%s", used ? ":" : "", name,
						 lo.deny_all < 0 ? "" : lo.deny_all ? ",deny=all" : ",deny=write",
						 lo.heap < 0 ? "" : lo.heap ? ",heap" : ",noheap");
			for (int r = 0; r < lo.nrules; r++)
				used += (size_t)snprintf(libs + used, sizeof(libs) - used, ",%s=%s",
							 lo.rule[r].out ? "out" : "keep", lo.rule[r].glob);
			break;
		}
		case 'd':
			if (strcmp(optarg, "write") && strcmp(optarg, "all")) {
				fprintf(stderr, "mpkit guard: --deny takes write or all, not '%s'\n", optarg);
				return 2;
			}
			deny = optarg;
			break;
		case 'r':
			report = 1;
			break;
		case 'H':
			heap = 1;
			break;
		case 'h':
			return cli_help(&cli_guard);
		default:
			return 2;
		}
	}
	if (*needs_heap && !heap) {
		fprintf(stderr, "mpkit guard: --lib %s: out= and keep= need heap (--heap, or heap after the name)\n",
			needs_heap);
		return 2;
	}
	if (!nlib || bad || optind >= argc) {
		if (bad)
			fprintf(stderr, "mpkit guard: --lib takes the library's file name, not a path\n");
		cli_usage(&cli_guard, stderr);
		return 2;
	}
	char pid[24];
	snprintf(pid, sizeof(pid), "%ld", (long)getpid()); /* PROG keeps it across execvp() */
	setenv("MPKIT_GUARD_LIB", libs, 1);
	setenv("MPKIT_GUARD_DENY", deny, 1);
	setenv("MPKIT_GUARD_PID", pid, 1);
	if (heap)
		setenv("MPKIT_GUARD_HEAP", "1", 1);
	else
		unsetenv("MPKIT_GUARD_HEAP");
	if (report)
		setenv("MPKIT_GUARD_REPORT", "1", 1);
	else
		unsetenv("MPKIT_GUARD_REPORT");
	return cli_exec_preloaded("guard", "MPKIT_GUARD_HELPER", "libmpkit-guard.so", argv + optind);
}

const struct cli_command cli_guard = {
	"guard", cmd_guard, "--lib NAME[,OPTION...]... [--deny write|all] [--heap] [--report] [--] PROG [ARGS]",
	"PROG with a library's data writable only while PROG runs inside it",
	"  -l, --lib=NAME     the library: its file name (libfoo.so.1), or that up\n"
	"                     to a dot (libfoo); loaded when PROG starts, or\n"
	"                     by PROG's dlopen() (guarded then, kept loaded);\n"
	"                     up to 8 --lib, each library in a domain of its own;\n"
	"                     after the name, comma-separated, that library's own\n"
	"                     options over the ones below: deny=write, deny=all,\n"
	"                     heap, noheap (--lib libz,deny=all,heap); with heap,\n"
	"                     out=NAME: the blocks allocated under the exports\n"
	"                     NAME matches (a glob: xmlXPathNew*) are PROG's,\n"
	"                     keep=NAME: they are the library's, over the rule\n"
	"                     that goes by the export's name (below); each word\n"
	"                     one NAME, repeated for more, the last match wins\n"
	"  -d, --deny=write   outside the library its data is read-only (default)\n"
	"  -d, --deny=all     outside the library its data cannot be read either\n"
	"  -H, --heap         the heap blocks the library's code allocates while\n"
	"                     PROG is inside it go in the domain too (the library\n"
	"                     API's blocks that PROG may write, e.g. a struct it\n"
	"                     fills in, then fault: try --report first)\n"
	"  -r, --report       report each write from outside (the first of each\n"
	"                     instruction whole), let it through, run PROG to its\n"
	"                     end and list every instruction that wrote, on stderr\n"
	"The library's writable data (.data, .bss; not RELRO) goes into a domain\n"
	"named guard:FILE, and each function it exports is entered through a\n"
	"gate that opens the domain to the calling thread until it returns.  A\n"
	"write from anywhere else faults, with mpkit's report after a line that\n"
	"names what was written (the library's symbol+0xOFF, unnamed static\n"
	"data at FILE+0xOFF, or a heap block); longjmp, C++ exceptions and\n"
	"pthread_cancel/pthread_exit across a gate close it again.  A call from\n"
	"one guarded library into another opens the callee's domain and leaves\n"
	"the caller's open: the callee may write what the caller hands it, but\n"
	"the caller's own code cannot write the callee's data.  With --heap\n"
	"the blocks its code allocates while inside (malloc and the rest, through\n"
	"any allocator preloaded after the helper) are in the domain too; free()\n"
	"and realloc() of them work from anywhere; those allocated under an\n"
	"export with alloc, dup or printf in its name (sqlite3_malloc64) are\n"
	"PROG's, unless out= or keep= says otherwise.  Not covered: callbacks the\n"
	"library makes (they run with its rights), blocks it allocated before it\n"
	"was guarded or through the C library (strdup()), blocks PROG hands in\n"
	"(docs/guard.md); with musl, the last page of its data (the rest of\n"
	"that page is musl's malloc's).  On the soft backend rights are\n"
	"process-wide: while one thread is inside the library every thread may\n"
	"write its data.\n"
	"environment:\n"
	"  MPKIT_GUARD_HELPER=PATH  the helper to preload, instead of\n"
	"                           libmpkit-guard.so in mpkit's helpers' directory\n"
	"  MPKIT_GUARD_VERBOSE=1    say what was guarded at PROG's start, name\n"
	"                           each export left ungated (too short to patch),\n"
	"                           count what each out= and keep= matched\n"
	"  MPKIT_GUARD_STATS=FILE   a line at exit per library: the calls through\n"
	"                           its gates (mpkit bench guard sums them)\n"
	"The programs PROG starts are guarded too where they load the library,\n"
	"and run as they would where it cannot be guarded.\n"
	"exit status: PROG's; 125 the library could not be guarded (no helper),\n"
	"or PROG never loaded it (PROG ran unguarded), 126 PROG cannot run, 127\n"
	"PROG not found, 2 usage\n",
};
