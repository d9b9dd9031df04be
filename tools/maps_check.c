/* SPDX-License-Identifier: MIT */
/*
 * mpkit maps PID --check: mpk_audit() from outside.  The process's
 * registry (src/registry.h) lists its regions with the key and protection
 * their pages should have now; /proc/PID/smaps says what they have.  Each
 * difference is a line, as mpk_audit_format() writes it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "mapcheck.h"
#include "mpkit.h"
#include "registry.h"

static int by_lo(const void *a, const void *b)
{
	const struct mpk_mapcheck_want *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

struct report {
	size_t n;
	int print;
};

static void differs(const struct mpk_mapcheck_want *w, uint64_t lo, uint64_t hi, int key, int prot, void *arg)
{
	struct report *r = arg;
	const struct mpk_reg_entry *e = w->tag;
	struct mpk_audit_entry a = {
		.start = (void *)(uintptr_t)lo,
		.end = (void *)(uintptr_t)hi,
		.expected_key = w->key,
		.found_key = key,
		.expected_prot = w->prot,
		.found_prot = prot,
	};
	char line[256];

	r->n++;
	if (!r->print)
		return;
	snprintf(a.domain_name, sizeof(a.domain_name), "%s", e->name);
	mpk_audit_format(&a, line, sizeof(line));
	printf("%s\n", line);
}

/* One look at reg's regions; the number of differences, or -1/errno. */
static long look(const char *pid, const struct mpk_reg_header *reg, int print)
{
	struct mpk_mapcheck_want *w = calloc(reg->count ? reg->count : 1, sizeof(*w));
	struct report r = { 0, print };

	if (!w)
		return -1;
	for (uint32_t i = 0; i < reg->count; i++) {
		const struct mpk_reg_entry *e = &reg->entry[i];
		w[i] = (struct mpk_mapcheck_want){ .lo = e->start, .hi = e->start + e->len, .key = e->key,
						   .prot = e->prot, .tag = e };
	}
	qsort(w, reg->count, sizeof(*w), by_lo);
	int rc = mpk_mapcheck(w, reg->count, pid, differs, &r);
	free(w);
	return rc ? -1 : (long)r.n;
}

int maps_check(const char *pid, struct mpk_reg_header *(*registry)(const char *pid))
{
	struct mpk_reg_header *reg = NULL;
	long n = 0;

	/* A difference may be the process changing rights or regions while
	 * we read: two more looks before saying so. */
	for (int i = 0; i < 3; i++) {
		if (i) {
			struct timespec ts = { 0, 10000000 };
			nanosleep(&ts, NULL);
		}
		free(reg);
		reg = registry(pid);
		if (!reg) {
			if (errno == ENOENT) {
				printf("process %s: no mpkit registry (not an mpkit process, or no domain "
				       "memory yet): nothing to check\n", pid);
				return cli_finish_output("maps", 0) ? 2 : 0;
			}
			fprintf(stderr, "mpkit maps: the registry of process %s: %s\n", pid, strerror(errno));
			return 2;
		}
		n = look(pid, reg, 0);
		if (n <= 0)
			break;
	}
	if (n > 0)
		n = look(pid, reg, 1); /* the last look, printed */
	if (n < 0) {
		fprintf(stderr, "mpkit maps: /proc/%s/smaps: %s\n", pid, strerror(errno));
		free(reg);
		return 2;
	}
	printf("process %s: %u region%s checked, %ld mismatch%s\n", pid, reg->count, reg->count == 1 ? "" : "s",
	       n, n == 1 ? "" : "es");
	if (reg->dropped)
		printf("  (the registry was full: %u regions not checked)\n", reg->dropped);
	free(reg);
	/* 1 means mismatches here: an output error is an error, 2. */
	return cli_finish_output("maps", 0) ? 2 : n ? 1 : 0;
}
