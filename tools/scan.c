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
#include "json.h"

struct out {
	FILE *f; /* the report, in memory until every input is scanned */
	int json;
	int count, nmaps, ncls[4];
	const char *last;
	FILE *mf; /* what was scanned, printed at the end */
	char *maps;
	size_t maps_size;
};

static void note_mapping(const char *where, uint64_t addr, uint64_t len, uint64_t nread, void *arg)
{
	struct out *o = arg;

	if (o->json) {
		fprintf(o->mf, "%s{\"where\": ", o->nmaps ? ", " : "");
		mpk_json_str(o->mf, where);
		fprintf(o->mf, ", \"address\": \"0x%llx\", \"bytes\": %llu, \"read\": %llu}", (unsigned long long)addr,
			(unsigned long long)len, (unsigned long long)nread);
	} else {
		fprintf(o->mf, "  %s 0x%llx, %llu bytes, %llu read\n", where, (unsigned long long)addr,
			(unsigned long long)len, (unsigned long long)nread);
	}
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
		mpk_json_str(o->f, g->where);
		fprintf(o->f, ", \"address\": \"0x%llx\", \"offset\": %llu, \"kind\": \"%s\", \"symbol\": ",
			(unsigned long long)g->addr, (unsigned long long)g->file_off,
			mpk__gadget_kind_name(g->kind));
		mpk_json_str(o->f, g->sym);
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

/* The options: -1 to go on, or the exit status. */
static int parse(int argc, char **argv, struct out *o, long *pid)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "pid", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = cli_getopt(&cli_scan, argc, argv, "jJp:h", longopts)) != -1) {
		char *end;
		if (c == 'h')
			return cli_help(&cli_scan) ? 2 : 0;
		if (c == '?')
			return 2;
		if (c != 'p') {
			o->json = 1;
			continue;
		}
		*pid = strtol(optarg, &end, 10);
		if (*end || end == optarg || *pid < 0) {
			fprintf(stderr, "mpkit scan: bad pid '%s'\n", optarg);
			return 2;
		}
	}
	if (*pid >= 0 && optind < argc)
		return cli_conflict(&cli_scan, "--pid", "a FILE");
	if (*pid < 0 && optind == argc) {
		cli_usage(&cli_scan, stderr);
		return 2;
	}
	return -1;
}

static int cmd_scan(int argc, char **argv)
{
	struct out o = { 0 };
	struct mpk_scan_cb cb = { print_gadget, note_mapping, &o };
	long pid = -1, gadgets = 0;
	int err = 0, rc = parse(argc, argv, &o, &pid);
	char *report = NULL;
	size_t size = 0;

	if (rc >= 0)
		return rc;
	o.f = open_memstream(&report, &size);
	o.mf = open_memstream(&o.maps, &o.maps_size);
	if (!o.f || !o.mf) {
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
	}
	for (int i = optind; i < argc; i++) {
		long n = mpk__scan_file(argv[i], &cb);
		if (n < 0) {
			fprintf(stderr, "mpkit scan: %s: %s\n", argv[i],
				mpk__scan_strerror(errno));
			err = 1;
		} else
			gadgets += n;
	}
	if (gadgets < 0)
		gadgets = 0;
	if (fclose(o.mf))
		err = 1;
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
	free(o.maps);
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

const struct cli_command cli_scan = {
	"scan", cmd_scan, "[--json|-J|-j] FILE... | [--json] --pid PID",
	"WRPKRU and XRSTOR sites in executable code, classed; exit 1 on a gadget",
	"Every WRPKRU and XRSTOR byte sequence in the executable code of each FILE,\n"
	"or of every executable mapping of process PID (vDSO included), with its\n"
	"symbol and class: mpkit (its checked sites), rop (loads a chosen PKRU only\n"
	"if the attacker sets EAX, and for XRSTOR the image, first), gadget (the\n"
	"code itself gives the value: a jump is enough).\n"
	"  -j, -J, --json  the report as one JSON object\n"
	"  -p, --pid PID   a running process, not files\n"
	"exit status: 0 no gadget, 1 a gadget (rop sites do not count), 2 an\n"
	"error (an input that cannot be read, a write error, a usage error)\n",
};
