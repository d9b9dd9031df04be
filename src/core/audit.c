/* SPDX-License-Identifier: MIT */
/*
 * mpk_audit(): what mpkit expects of its memory against what the kernel
 * says in /proc/self/smaps.  A page keeps its key only until something
 * maps over it (mmap MAP_FIXED, mremap) or changes it (mprotect,
 * pkey_mprotect), and the kernel tells nobody.  A feature on the core's
 * services: the regions (their domain's key and protection, as the
 * registry keeps them for `mpkit maps --check`), the windows and the
 * ranges kept reserved after lockdown.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "internal.h"
#include "os.h"
#include "../shared/mapcheck.h"
#include "window.h"

void mpk__region_expect(const struct mpk_region *r, int *key, int *prot)
{
	const struct mpk_domain *d = __atomic_load_n(&r->domain, __ATOMIC_ACQUIRE);
	int k = __atomic_load_n(&d->key, __ATOMIC_ACQUIRE);

	*key = k >= 0 ? k : 0;
	*prot = k >= 0 ? mpk__region_prot(r, PROT_READ | PROT_WRITE, k)
		       : mpk__region_prot(r, __atomic_load_n(&d->prot, __ATOMIC_ACQUIRE), 0);
}

/* What a range's pages should be: a region's (tag: its domain), or
 * reserved (tag NULL, PROT_NONE, any key). */
struct wants {
	struct mpk_mapcheck_want *w;
	size_t n, cap;
	bool short_of_room;
	uint64_t sig; /* of the regions' expectations and the kept bytes */
};

/* A signature of what the regions expect, in any order: a look is exact
 * when it is the same under the locks as when the wants were made. */
static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static void sig_region(struct mpk_region *r, void *arg)
{
	int key, prot;

	mpk__region_expect(r, &key, &prot);
	*(uint64_t *)arg += mix(r->start ^ mix(r->len ^ mix((uint64_t)(key + 1) << 8 | (unsigned)prot)));
}

/* kept: mpk__window_kept(), read before any domain lock is taken (the
 * window lock comes before domain locks, never after). */
static uint64_t signature(size_t kept)
{
	uint64_t sig = mix(kept);
	mpk__regions_each(sig_region, &sig);
	return sig;
}

static void push(struct wants *s, uintptr_t lo, uintptr_t hi, const struct mpk_domain *d, int key, int prot)
{
	if (lo >= hi)
		return;
	if (s->n == s->cap) {
		s->short_of_room = true;
		return;
	}
	s->w[s->n++] = (struct mpk_mapcheck_want){ .lo = lo, .hi = hi, .key = key, .prot = prot, .tag = d };
}

static void count_region(struct mpk_region *r, void *arg)
{
	(void)r;
	(*(size_t *)arg)++;
}

static void add_region(struct mpk_region *r, void *arg)
{
	int key, prot;

	mpk__region_expect(r, &key, &prot);
	push(arg, r->start, r->start + r->len, r->domain, key, prot);
}

static int count_range(const struct mpk_range *r, void *arg)
{
	(void)r;
	(*(size_t *)arg)++;
	return 0;
}

/* The windows' spans, as reserved for now: the gaps between their
 * regions become reserved wants once the regions are sorted. */
static int add_window(const struct mpk_range *r, void *arg)
{
	if (r->kind == MPK_RANGE_WINDOW)
		push(arg, r->lo, r->hi, NULL, -1, PROT_NONE);
	return 0;
}

static void add_kept(uintptr_t lo, uintptr_t hi, void *arg)
{
	push(arg, lo, hi, NULL, -1, PROT_NONE);
}

static int by_lo(const void *a, const void *b)
{
	const struct mpk_mapcheck_want *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/*
 * Everything mpkit expects, sorted and without overlaps, in memory of its
 * own (mmap: the library may be the process's allocator).  Windows come
 * in whole and leave as the reserved gaps between their regions.  0, or
 * -1/ENOMEM.
 */
static int expectations(struct wants *s)
{
	size_t more = 0;

	for (;;) {
		size_t nr = more, nranges = 0;
		pthread_mutex_lock(&mpk_g.lock);
		mpk__regions_each(count_region, &nr);
		pthread_mutex_unlock(&mpk_g.lock);
		mpk__ranges_each(count_range, &nranges);
		nranges += mpk__kept_each(NULL, NULL);
		/* Each window or region leaves one gap at most. */
		s->cap = 2 * (nr + nranges) + 64;
		s->w = mpk_os_map(s->cap * sizeof(*s->w), PROT_READ | PROT_WRITE);
		if (!s->w)
			return -1;
		s->n = 0;
		s->short_of_room = false;
		size_t half = s->cap / 2;
		size_t cap = s->cap;
		s->cap = half; /* the regions and ranges; the gaps go above */
		pthread_mutex_lock(&mpk_g.lock);
		mpk__regions_each(add_region, s);
		s->sig = signature(mpk__window_kept());
		pthread_mutex_unlock(&mpk_g.lock);
		size_t regions = s->n;
		mpk__ranges_each(add_window, s);
		size_t windows_end = s->n;
		mpk__kept_each(add_kept, s);
		s->cap = cap;
		if (!s->short_of_room) {
			mpk__sort(s->w, regions, sizeof(*s->w), by_lo);
			/* Each window's gaps, by a walk over the sorted regions. */
			for (size_t i = regions; i < windows_end; i++) {
				uintptr_t at = s->w[i].lo, end = s->w[i].hi;
				for (size_t j = 0; j < regions; j++) {
					if (s->w[j].hi <= at || s->w[j].lo >= end)
						continue;
					push(s, at, s->w[j].lo, NULL, -1, PROT_NONE);
					at = s->w[j].hi;
				}
				push(s, at, end, NULL, -1, PROT_NONE);
				s->w[i].hi = s->w[i].lo; /* the window itself goes */
			}
			size_t n = 0;
			for (size_t i = 0; i < s->n; i++)
				if (s->w[i].lo < s->w[i].hi)
					s->w[n++] = s->w[i];
			s->n = n;
			mpk__sort(s->w, s->n, sizeof(*s->w), by_lo);
			return 0;
		}
		/* More regions came meanwhile: again, with room for them. */
		mpk_os_unmap(s->w, cap * sizeof(*s->w));
		more += more + 64;
	}
}

/* The mismatches found so far: out[] holds the first max of them. */
struct found {
	struct mpk_audit_entry *out;
	size_t max, n;
};

static void mismatch(const struct mpk_mapcheck_want *w, uint64_t lo, uint64_t hi, int key, int prot, void *arg)
{
	struct found *f = arg;

	if (f->n < f->max)
		f->out[f->n] = (struct mpk_audit_entry){
			.start = (void *)(uintptr_t)lo,
			.end = (void *)(uintptr_t)hi,
			.domain = w->tag,
			.expected_key = w->key,
			.found_key = key,
			.expected_prot = w->prot,
			.found_prot = prot,
		};
	f->n++;
}

MPK_EXPORT int mpk_audit(struct mpk_audit_entry *out, size_t max)
{
	if (mpk__ensure_init())
		return -1;
	if (!out && max) {
		errno = EINVAL;
		return -1;
	}
	struct found f = { .out = out, .max = max };
	/* The maps are read with every domain's lock held, so that no rights
	 * change (soft) or key move runs meanwhile; what was expected is
	 * made before (it sorts, which may allocate), and counts only if it
	 * is still so under the locks.  A mismatch may yet be an allocation
	 * half done (mapped, not yet a region): look again before saying so. */
	bool exact = false;
	for (int look = 0, tries = 0; look < 3 && tries < 100; tries++) {
		struct wants s;
		if (look) {
			struct timespec ts = { 0, 2000000 };
			nanosleep(&ts, NULL);
		}
		if (expectations(&s))
			return -1;
		f = (struct found){ .out = out, .max = max };
		int rc = 0, err = 0;
		pthread_mutex_lock(&mpk_g.lock);
		size_t kept = mpk__window_kept();
		mpk__domains_lock();
		bool same = signature(kept) == s.sig;
		if (same) {
			rc = mpk_mapcheck(s.w, s.n, NULL, mismatch, &f);
			err = errno;
		}
		mpk__domains_unlock();
		pthread_mutex_unlock(&mpk_g.lock);
		mpk_os_unmap(s.w, s.cap * sizeof(*s.w));
		if (rc) {
			errno = err;
			return -1;
		}
		if (!same)
			continue;
		exact = true;
		if (!f.n)
			break;
		look++;
	}
	if (!exact) {
		errno = EAGAIN;
		return -1;
	}
	/* Names now: a domain destroyed meanwhile says so. */
	size_t named = f.n < max ? f.n : max;
	pthread_mutex_lock(&mpk_g.lock);
	for (size_t i = 0; i < named; i++) {
		const struct mpk_domain *d = out[i].domain;
		const char *name = !d ? "" : mpk__domain_ok(d) ? d->name : "(destroyed)";
		snprintf(out[i].domain_name, sizeof(out[i].domain_name), "%s", name);
	}
	pthread_mutex_unlock(&mpk_g.lock);
	return f.n > INT32_MAX ? INT32_MAX : (int)f.n;
}

/* "rw- key 3", "--- any key", "rw-" (keys not reported), "nothing mapped" */
static void state(char *buf, size_t size, int key, int prot, bool expected)
{
	if (prot < 0) {
		snprintf(buf, size, "nothing mapped");
		return;
	}
	char p[4] = { prot & PROT_READ ? 'r' : '-', prot & PROT_WRITE ? 'w' : '-', prot & PROT_EXEC ? 'x' : '-', 0 };
	if (key >= 0)
		snprintf(buf, size, "%s key %d", p, key);
	else
		snprintf(buf, size, "%s%s", p, expected ? " any key" : "");
}

MPK_EXPORT size_t mpk_audit_format(const struct mpk_audit_entry *e, char *buf, size_t size)
{
	char want[32], got[32];

	if (!e || (!buf && size)) {
		errno = EINVAL;
		return 0;
	}
	state(want, sizeof(want), e->expected_key, e->expected_prot, true);
	state(got, sizeof(got), e->found_key, e->found_prot, false);
	int n;
	if (e->domain || e->domain_name[0])
		n = snprintf(buf, size, "%p-%p domain \"%.63s\": expected %s, found %s", e->start, e->end,
			     e->domain_name, want, got);
	else
		n = snprintf(buf, size, "%p-%p reserved by mpkit: expected %s, found %s", e->start, e->end, want,
			     got);
	return n < 0 ? 0 : (size_t)n;
}
