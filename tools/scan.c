/* SPDX-License-Identifier: MIT */
/*
 * mpkit scan FILE... | --pid PID [--json]: every WRPKRU and XRSTOR byte
 * sequence in executable code, with its symbol and its class (src/shared/scan.h):
 * mpkit's checked site, ROP-only, or gadget.  Exit 1 when a gadget is
 * found; ROP-only sites are reported, not counted; 2 on an error (an input
 * that cannot be read, stdout that cannot be written), with nothing on
 * stdout: the report is written only once every input has been scanned.
 * The scanner is the library's (src/shared/scan.c), the same one mpk_lockdown()
 * runs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "scan.h"
#include "scan_cmd.h"

struct out {
	FILE *f; /* the report, in memory until every input is scanned */
	int json;
	int count, nmaps, ncls[4];
	const char *last;
	char maps[8192]; /* what was scanned, printed at the end */
};

static void note_mapping(const char *where, uint64_t addr, uint64_t len, uint64_t nread, void *arg)
{
	struct out *o = arg;
	size_t used = strlen(o->maps);
	const char *fmt = o->json ? "%s{\"where\": \"%s\", \"address\": \"0x%llx\", \"bytes\": %llu, \"read\": %llu}"
				  : "%s  %s 0x%llx, %llu bytes, %llu read\n";
	if (strchr(where, '"') || strchr(where, '\\'))
		where = "?";
	snprintf(o->maps + used, sizeof(o->maps) - used, fmt, o->json && o->nmaps ? ", " : "", where,
		 (unsigned long long)addr, (unsigned long long)len, (unsigned long long)nread);
	o->nmaps++;
}

/* What a class means, in a word or three. */
static const char *class_note(const struct mpk_gadget *g)
{
	if (g->cls == MPK_SITE_MPKIT)
		return "mpkit site (checked)";
	if (g->cls == MPK_SITE_ROP)
		return g->kind == MPK_GADGET_XRSTOR ? "ROP only (EAX bit 9 and the image from the attacker)"
						    : "ROP only (EAX from the attacker)";
	return g->unsure ? "GADGET (too many paths to follow)" : "GADGET (the code sets the value)";
}

static int print_gadget(const struct mpk_gadget *g, void *arg)
{
	struct out *o = arg;

	o->ncls[g->cls & 3]++;
	if (o->json) {
		fprintf(o->f, "%s\n    {\"where\": ", o->count ? "," : "");
		cli_json_fstr(o->f, g->where);
		fprintf(o->f, ", \"address\": \"0x%llx\", \"offset\": %llu, \"kind\": \"%s\", \"symbol\": ",
			(unsigned long long)g->addr, (unsigned long long)g->file_off,
			mpk__gadget_kind_name(g->kind));
		if (g->sym)
			cli_json_fstr(o->f, g->sym);
		else
			fprintf(o->f, "null");
		fprintf(o->f, ", \"symbol_offset\": %llu, \"class\": \"%s\", \"mpkit\": %s",
			(unsigned long long)(g->sym ? g->sym_off : 0), mpk__site_class_name(g->cls),
			g->mpkit ? "true" : "false");
		if (g->cls == MPK_SITE_GADGET && !g->unsure)
			fprintf(o->f, ", \"from\": \"0x%llx\"", (unsigned long long)g->from);
		fprintf(o->f, ", \"unsure\": %s}", g->unsure ? "true" : "false");
	} else {
		if (!o->last || strcmp(o->last, g->where)) {
			fprintf(o->f, "%s:\n", g->where);
			free((void *)o->last);
			o->last = strdup(g->where);
		}
		char sym[300], from[40] = "";
		if (g->sym)
			snprintf(sym, sizeof(sym), "%s+0x%llx", g->sym, (unsigned long long)g->sym_off);
		else
			snprintf(sym, sizeof(sym), "?");
		if (g->cls == MPK_SITE_GADGET && !g->unsure)
			snprintf(from, sizeof(from), ", from 0x%llx", (unsigned long long)g->from);
		fprintf(o->f, "  0x%-14llx %-7s %-44s %s%s\n", (unsigned long long)g->addr,
			mpk__gadget_kind_name(g->kind), sym, class_note(g), from);
	}
	o->count++;
	return 0;
}

static int scan_usage(FILE *f)
{
	fprintf(f, "usage: mpkit scan [--json] FILE...\n"
		   "       mpkit scan [--json] --pid PID   (every executable mapping, vDSO included)\n"
		   "classes: mpkit (its checked sites), rop (loads a chosen PKRU only if the\n"
		   "attacker sets EAX, and for XRSTOR the image, first), gadget (the code itself\n"
		   "gives the value: a jump is enough)\n"
		   "exit status: 0 no gadget, 1 a gadget (rop sites do not count), 2 an\n"
		   "error (an input that cannot be read, a write error, a usage error)\n");
	return f == stdout && cli_output_ok("scan") ? 0 : 2;
}

int mpk_cmd_scan(int argc, char **argv)
{
	struct out o = { 0 };
	struct mpk_scan_cb cb = { print_gadget, note_mapping, &o };
	long pid = -1, gadgets = 0;
	int nfiles = 0, err = 0;
	char *report = NULL;
	size_t size = 0;

	for (int i = 1; i < argc; i++) {
		if (cli_is_json_flag(argv[i]))
			o.json = 1;
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return scan_usage(stdout);
		else if (!strcmp(argv[i], "--pid") && i + 1 < argc) {
			char *end;
			pid = strtol(argv[++i], &end, 10);
			if (*end || pid < 0) {
				fprintf(stderr, "mpkit scan: bad pid '%s'\n", argv[i]);
				return 2;
			}
		} else if (argv[i][0] == '-')
			return scan_usage(stderr);
		else
			nfiles++;
	}
	if ((pid >= 0) == (nfiles > 0))
		return scan_usage(stderr);
	o.f = open_memstream(&report, &size);
	if (!o.f) {
		fprintf(stderr, "mpkit scan: %s\n", strerror(errno));
		return 2;
	}
	if (o.json)
		fprintf(o.f, "{\"gadgets\": [");
	if (pid >= 0) {
		gadgets = mpk__scan_pid((pid_t)pid, &cb);
		if (gadgets < 0) {
			fprintf(stderr, "mpkit scan: pid %ld: %s\n", pid, strerror(errno));
			err = 1;
		}
	} else {
		for (int i = 1; i < argc; i++) {
			if (argv[i][0] == '-') {
				i += !strcmp(argv[i], "--pid");
				continue;
			}
			long n = mpk__scan_file(argv[i], &cb);
			if (n < 0) {
				fprintf(stderr, "mpkit scan: %s: %s\n", argv[i], mpk__scan_strerror(errno));
				err = 1;
			} else
				gadgets += n;
		}
	}
	if (gadgets < 0)
		gadgets = 0;
	if (o.json)
		fprintf(o.f, "%s], \"scanned\": [%s], \"total\": %d, \"classes\": {\"mpkit\": %d, \"rop\": %d, "
			"\"gadget\": %ld}, \"outside_mpkit\": %d}\n",
			o.count ? "\n  " : "", o.maps, o.count, o.ncls[MPK_SITE_MPKIT], o.ncls[MPK_SITE_ROP],
			gadgets, o.count - o.ncls[MPK_SITE_MPKIT]);
	else
		fprintf(o.f, "scanned:\n%s%d site%s: %d mpkit, %d rop only, %ld gadget%s\n", o.maps, o.count,
			o.count == 1 ? "" : "s", o.ncls[MPK_SITE_MPKIT], o.ncls[MPK_SITE_ROP], gadgets,
			gadgets == 1 ? "" : "s");
	free((void *)o.last);
	if (fclose(o.f)) {
		fprintf(stderr, "mpkit scan: the report: %s\n", strerror(errno));
		err = 1;
	}
	if (!err)
		fwrite(report, 1, size, stdout);
	free(report);
	if (err || !cli_output_ok("scan"))
		return 2;
	return gadgets ? 1 : 0;
}
