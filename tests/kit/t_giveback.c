/* SPDX-License-Identifier: MIT */
/*
 * The scenario of t_lockdown_giveback_errno and _kill: objects of every
 * kind (heaps, whose last one takes the metadata area along, guarded
 * heaps, vaults, mpk_alloc() regions, code, watches, adopted ranges,
 * mapped files, domains, a window added after lockdown) made before
 * mpk_lockdown() and given back after it, then made and given back round
 * after round, interleaved with 1,000 rounds of thread creation
 * (pthread_create() and mpk_thread_create() in turn) and the program's own
 * mmap/mprotect/madvise/munmap, most of them asked (a hint, no MAP_FIXED)
 * for the address mpkit gave back last.  Every call must work, and the
 * space mpkit keeps reserved must not grow round after round but by what
 * was adopted meanwhile: the metadata area and files reuse it.
 */
#include "t_giveback.h"
#include "t_window.h"

#include <pthread.h>
#include <stdint.h>

#define ROUNDS 1000
#define ADOPT_EVERY 50 /* each late mpk_adopt() stacks a filter for good */
#define NHINTS 16

static size_t page;
static mpk_domain *dom;
static struct {
	uintptr_t a;
	size_t len;
} hint[NHINTS]; /* the last ranges mpkit gave back */
static unsigned nhint, probes, hinted, threads;

static void gave_back(const void *p, size_t len)
{
	hint[nhint % NHINTS].a = (uintptr_t)p;
	hint[nhint % NHINTS].len = len;
	nhint++;
}

static void meta_range(uintptr_t lo, uintptr_t hi, void *arg)
{
	(void)arg;
	gave_back((void *)lo, hi - lo);
}

#define SYS_OK(call)                                                                   \
	do {                                                                           \
		if ((call) != 0)                                                       \
			t_fail("%s: %s", #call, strerror(errno));                     \
	} while (0)

/* The program's own mapping, at hint if the kernel gives it there: every
 * call on it must work. */
static void probe(uintptr_t at, size_t len)
{
	unsigned char *p = mmap((void *)at, len, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	probes++;
	hinted += at != 0;
	if (p == MAP_FAILED) {
		t_fail("mmap(%#lx, %zu): %s", (unsigned long)at, len, strerror(errno));
		return;
	}
	p[0] = p[len - 1] = 0x5a;
	SYS_OK(mprotect(p, len, PROT_READ));
	SYS_OK(mprotect(p, len, PROT_READ | PROT_WRITE));
	SYS_OK(madvise(p, len, MADV_DONTNEED));
	CHECK(p[len - 1] == 0);
	SYS_OK(munmap(p, len));
}

static void *run(void *arg)
{
	return arg;
}

/* A thread, by pthread_create() in even rounds and mpk_thread_create()
 * in odd ones, with a stack of changing size (64 KiB to 1 MiB; the
 * default every eighth round): glibc keeps the stacks of joined threads
 * for threads of about their size, so new ones are mapped now and then. */
static void spawn(unsigned round)
{
	pthread_attr_t a, *ap = round % 8 == 7 ? NULL : &a;
	pthread_t t;
	int e;

	REQUIRE(pthread_attr_init(&a) == 0);
	REQUIRE(pthread_attr_setstacksize(&a, (64u << 10) * (1 + round % 16)) == 0);
	if (round % 2 == 0 && (e = pthread_create(&t, ap, run, NULL)))
		t_fail("pthread_create: %s", strerror(e));
	else if (round % 2 && mpk_thread_create(&t, ap, run, NULL))
		t_fail("mpk_thread_create: %s", strerror(errno));
	else
		pthread_join(t, NULL);
	pthread_attr_destroy(&a);
	threads++;
}

/* ---- one of each kind, made and given back ---- */

static void heap_round(unsigned flags)
{
	mpk_heap *h = mpk_heap_create(dom, flags);
	if (!h) {
		t_fail("mpk_heap_create: %s", strerror(errno));
		return;
	}
	void *a = mpk_heap_malloc(h, 100), *b = mpk_heap_malloc(h, 300 << 10);
	CHECK(a && b);
	b = mpk_heap_realloc(h, b, 3 << 20); /* a big block moves (mremap) */
	CHECK(b != NULL);
	mpk_heap_free(h, a);
	mpk_heap_free(h, b);
	mpk__layer_ranges_each(meta_range, NULL); /* the last heap: they go */
	CHECK(mpk_heap_destroy(h) == 0);
}

static void vault_round(void)
{
	mpk_domain *v = mpk_domain_create("gb-vault", MPK_NONE, 0);
	if (!v) {
		t_fail("mpk_domain_create: %s", strerror(errno));
		return;
	}
	void *s = mpk_secret_alloc(v, 32);
	CHECK(s != NULL);
	CHECK(mpk_secret_free(s) == 0);
	CHECK(mpk_domain_destroy(v) == 0);
}

static void region_round(size_t pages)
{
	void *p = mpk_alloc(dom, pages * page);
	CHECK(p != NULL);
	CHECK(mpk_free(dom, p) == 0);
	gave_back(p, pages * page);
}

static void code_round(void)
{
	void *c = mpk_code_alloc(dom, page);
	CHECK(c != NULL);
	CHECK(mpk_free(dom, c) == 0);
	gave_back(c, page);
}

static void on_hit(const struct mpk_watch_hit *hit, void *arg)
{
	(void)hit;
	++*(int *)arg;
}

static void watch_round(void)
{
	unsigned char *p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int hits = 0;

	REQUIRE(p != MAP_FAILED);
	int id = mpk_watch(p, 8, MPK_WATCH_WRITE, on_hit, &hits);
	CHECK(id >= 0);
	CHECK(id < 0 || mpk_unwatch(id) == 0);
	SYS_OK(mprotect(p, page, PROT_READ)); /* the program's again */
	SYS_OK(munmap(p, page));
}

static int memfd;

static void file_round(size_t pages)
{
	void *f = mpk_map_file(dom, memfd, 0, pages * page);
	if (!f) {
		t_fail("mpk_map_file: %s", strerror(errno));
		return;
	}
	((volatile char *)f)[0] = 1;
	CHECK(mpk_free(dom, f) == 0);
	gave_back(f, pages * page);
}

static void adopt_round(void)
{
	unsigned char *m = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	REQUIRE(m != MAP_FAILED);
	if (mpk_adopt(dom, m, 4 * page)) {
		t_fail("mpk_adopt: %s", strerror(errno));
		munmap(m, 4 * page);
		return;
	}
	m[0] = 1;
	CHECK(mpk_free(dom, m) == 0);
	gave_back(m, 4 * page);
}

static void domain_round(void)
{
	mpk_domain *x = mpk_domain_create("gb-short", MPK_RW, 0);
	if (!x) {
		t_fail("mpk_domain_create: %s", strerror(errno));
		return;
	}
	void *p = mpk_alloc(x, 2 * page);
	CHECK(p != NULL);
	CHECK(mpk_domain_destroy(x) == 0); /* its memory goes with it */
	gave_back(p, 2 * page);
}

/* mpkit maps 9 GiB units (PROT_NONE) until a window is made for one,
 * and gives them back. */
static void window_round(void)
{
	const size_t big = (size_t)9 << 30;
	void *got[4];
	int n = 0, w0 = t_windows();

	while (n < 4 && t_windows() == w0) {
		if (!(got[n] = mpk__window_map(big, 0, PROT_NONE))) {
			t_fail("mpk__window_map: %s", strerror(errno));
			break;
		}
		n++;
	}
	CHECK(t_windows() > w0);
	while (n--)
		mpk__window_unmap(got[n], big);
}

void t_giveback_run(unsigned flags, const char *meta)
{
	page = (size_t)sysconf(_SC_PAGESIZE);
	REQUIRE((dom = mpk_domain_create("giveback", MPK_RW, 0)));
	REQUIRE((memfd = memfd_create("giveback", 0)) >= 0);
	REQUIRE(ftruncate(memfd, 16 * (off_t)page) == 0);

	/* Before lockdown: one of each, given back after it. */
	mpk_heap *h0 = mpk_heap_create(dom, 0);
	mpk_domain *v0 = mpk_domain_create("gb-vault0", MPK_NONE, 0);
	REQUIRE(h0 && v0);
	REQUIRE(mpk_heap_malloc(h0, 100) && mpk_heap_malloc(h0, 1 << 20));
	void *s0 = mpk_secret_alloc(v0, 32);
	void *r0 = mpk_alloc(dom, 3 * page), *c0 = mpk_code_alloc(dom, page);
	void *f0 = mpk_map_file(dom, memfd, 0, 2 * page);
	unsigned char *m0 = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *w = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int hits = 0;
	REQUIRE(s0 && r0 && c0 && f0 && m0 != MAP_FAILED && w != MAP_FAILED);
	REQUIRE(mpk_adopt(dom, m0, 4 * page) == 0);
	int wid = mpk_watch(w, 8, MPK_WATCH_WRITE, on_hit, &hits);
	REQUIRE(wid >= 0);

	REQUIRE(mpk_lockdown(flags) == 0);

	mpk__layer_ranges_each(meta_range, NULL);
	CHECK(mpk_heap_destroy(h0) == 0);
	CHECK(mpk_secret_free(s0) == 0);
	CHECK(mpk_domain_destroy(v0) == 0);
	CHECK(mpk_free(dom, r0) == 0);
	CHECK(mpk_free(dom, c0) == 0);
	CHECK(mpk_free(dom, f0) == 0);
	CHECK(mpk_free(dom, m0) == 0);
	((volatile unsigned char *)w)[0] = 1; /* reported, then done */
	CHECK(hits == 1);
	CHECK(mpk_unwatch(wid) == 0);
	SYS_OK(mprotect(w, page, PROT_READ));
	gave_back(r0, 3 * page);
	gave_back(f0, 2 * page);
	gave_back(m0, 4 * page);
	spawn(0);
	spawn(1);
	for (unsigned i = 0; i < NHINTS && i < nhint; i++)
		probe(hint[i].a, hint[i].len);

	size_t kept0 = 0;
	unsigned late_adopts = 0;
	for (unsigned i = 0; i < ROUNDS && !t_failures; i++) {
		switch (i % 10) {
		case 0: heap_round(0); break;
		case 1: heap_round(MPK_HEAP_GUARDED); break;
		case 2: vault_round(); break;
		case 3: region_round(1 + i % 7); break;
		case 4: code_round(); break;
		case 5: watch_round(); break;
		case 6: file_round(1 + i % 3); break;
		case 7: domain_round(); break;
		case 8:
			if (i % ADOPT_EVERY == 8) {
				adopt_round();
				late_adopts += i >= 100;
			}
			break;
		case 9:
			if (i == 509)
				window_round();
			break;
		}
		spawn(i);
		probe(hint[(nhint - 1) % NHINTS].a, hint[(nhint - 1) % NHINTS].len);
		if (i % 4 == 0)
			probe(0, (1 + i % 16) * page);
		if (i == 99)
			kept0 = mpk__window_kept();
	}
	size_t kept = mpk__window_kept();
	printf("%s backend, metadata %s, %s: %d rounds, %u threads, %u mappings of the "
	       "program's (%u asked for an address mpkit gave back), %zu KiB kept reserved "
	       "(%zu KiB after round 100)\n",
	       mpk_backend_name(mpk_backend()), meta,
	       flags & MPK_LOCK_ERRNO ? "MPK_LOCK_ERRNO" : "default", ROUNDS, threads, probes,
	       hinted, kept >> 10, kept0 >> 10);
	/* Only what was adopted since may add to it. */
	CHECK(kept <= kept0 + late_adopts * 4 * page);
}

/* The child of t_giveback_child(): its metadata choice, then the scenario. */
struct t_giveback_case {
	void (*scenario)(unsigned flags, const char *meta);
	unsigned flags;
	const char *meta;
};

static void t_giveback_main(void *arg)
{
	const struct t_giveback_case *c = arg;
	if (c->meta)
		setenv("MPKIT_HEAP_META", c->meta, 1);
	c->scenario(c->flags, c->meta);
}

bool t_giveback_child(void (*scenario)(unsigned flags, const char *meta), unsigned flags,
		      const char *meta)
{
	const char *mode = flags & MPK_LOCK_ERRNO ? "MPK_LOCK_ERRNO" : "default (SIGSYS)";
	const char *how = meta ? meta : "as chosen";
	struct t_giveback_case c = { scenario, flags, meta };
	struct t_child r = t_child(t_giveback_main, &c, T_CHILD_CHECKS);

	if (r.signal)
		t_fail("%s, metadata %s: killed by signal %d%s", mode, how, r.signal,
		       r.signal == SIGSYS ? " (SIGSYS: the filter)" : "");
	else if (r.exit_code)
		t_fail("%s, metadata %s: exit %d", mode, how, r.exit_code);
	return !r.exit_code;
}
