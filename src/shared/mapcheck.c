/* SPDX-License-Identifier: MIT */
/* Ranges against their mappings (mapcheck.h): one sweep over both, in
 * address order. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <sys/mman.h>

#include "mapcheck.h"
#include "procmaps.h"

/* The piece found last, held back until the next one cannot join it. */
struct pending {
	const struct mpk_mapcheck_want *w;
	uint64_t lo, hi;
	int key, prot;
	mpk_mapcheck_fn fn;
	void *arg;
};

static void flush(struct pending *p)
{
	if (p->w)
		p->fn(p->w, p->lo, p->hi, p->key, p->prot, p->arg);
	p->w = NULL;
}

static void differs(struct pending *p, const struct mpk_mapcheck_want *w, uint64_t lo, uint64_t hi, int key,
		    int prot)
{
	if (p->w == w && p->hi == lo && p->key == key && p->prot == prot) {
		p->hi = hi;
		return;
	}
	flush(p);
	*p = (struct pending){ w, lo, hi, key, prot, p->fn, p->arg };
}

static int prot_of(const char *perms)
{
	return (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
	       (perms[2] == 'x' ? PROT_EXEC : 0);
}

/* The part of w no mapping covered is not mapped at all. */
static void settle(struct pending *p, struct mpk_mapcheck_want *w)
{
	if (w->pos < w->hi)
		differs(p, w, w->pos, w->hi, -1, -1);
	w->pos = w->hi;
}

int mpk_mapcheck(struct mpk_mapcheck_want *w, size_t n, const char *pid, mpk_mapcheck_fn fn, void *arg)
{
	struct mpk_procmaps pm;
	struct mpk_procmaps_vma v;
	struct pending p = { .fn = fn, .arg = arg };
	size_t i = 0;
	int rc = 0;

	for (size_t j = 0; j < n; j++)
		w[j].pos = w[j].lo;
	if (mpk_procmaps_open(&pm, pid, "ProtectionKey"))
		return -1;
	while (i < n && (rc = mpk_procmaps_next(&pm, &v)) > 0) {
		int key = v.field >= 0 ? (int)v.field : -1, prot = prot_of(v.perms);
		/* Wants that end before this mapping are done. */
		for (; i < n && w[i].hi <= v.lo; i++)
			settle(&p, &w[i]);
		for (size_t j = i; j < n && w[j].lo < v.hi; j++) {
			uint64_t lo = w[j].lo > v.lo ? w[j].lo : v.lo, hi = w[j].hi < v.hi ? w[j].hi : v.hi;
			if (lo >= hi)
				continue;
			if (w[j].pos < lo)
				differs(&p, &w[j], w[j].pos, lo, -1, -1);
			if ((key >= 0 && w[j].key >= 0 && key != w[j].key) || prot != w[j].prot)
				differs(&p, &w[j], lo, hi, key, prot);
			w[j].pos = hi;
		}
		/* Wants that end within this mapping are done. */
		for (; i < n && w[i].hi <= v.hi; i++)
			settle(&p, &w[i]);
	}
	int err = errno;
	mpk_procmaps_close(&pm);
	if (i < n && rc < 0) {
		errno = err;
		return -1;
	}
	for (; i < n; i++)
		settle(&p, &w[i]);
	flush(&p);
	return 0;
}
