/* SPDX-License-Identifier: MIT */
/*
 * mpk_audit() reports nothing in a program that leaves mpkit's memory
 * alone, whatever mpkit itself does with it: regions of open, closed,
 * read-only and shared domains, rights changed by this thread and by
 * another (soft: the protection is the union, and follows), mpk_set_all(),
 * more domains than keys (virtual domains evicted and back on hw), freed
 * regions (reserved), adopted memory, a mapped file, heaps (plain and
 * guarded), a secret, code memory written and run, a destroyed domain,
 * and, after mpk_lockdown(), memory given back and kept reserved.  And
 * while another thread flips its rights to a domain all the time, every
 * audit still finds nothing: what is expected is read with the maps.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "t.h"
#include "t_kernel.h"
#include "t_state.h"

#if defined(__SANITIZE_THREAD__)
/* The lockdown child is forked while mpkit's fork handlers hold the
 * window lock; the child makes its locks new rather than unlocking them,
 * so ThreadSanitizer takes the window lock as held for good there and
 * sees every later lock under it: a lock-order cycle with the parent's
 * map_file (domain lock, then window lock) that no thread can run. */
const char *__tsan_default_options(void);
__attribute__((visibility("default"))) const char *__tsan_default_options(void)
{
	return "detect_deadlocks=0";
}
#endif

#define MAXE 8
static struct mpk_audit_entry e[MAXE];

static void expect_clean(const char *when)
{
	int n = mpk_audit(e, MAXE);
	if (n != 0) {
		t_fail("%s: mpk_audit() = %d (errno %d)", when, n, errno);
		for (int i = 0; i < n && i < MAXE; i++) {
			char line[256];
			mpk_audit_format(&e[i], line, sizeof(line));
			fprintf(stderr, "  %s\n", line);
		}
	}
}

static mpk_domain *flip_d;
static atomic_int flip_stop;

/* Another thread changes its own rights to flip_d all the time. */
static void *flipper(void *arg)
{
	(void)arg;
	static const int r[] = { MPK_READ, MPK_NONE, MPK_RW, MPK_NONE };
	for (unsigned i = 0; !atomic_load(&flip_stop); i++)
		if (mpk_set(flip_d, r[i % 4]))
			return (void *)1;
	return NULL;
}

static void *reader(void *arg)
{
	/* soft: this thread's rights widen the union of every thread's */
	mpk_domain *d = arg;
	if (mpk_set(d, MPK_READ))
		return (void *)1;
	expect_clean("another thread holds read");
	return NULL;
}

static void lockdown_kept(void)
{
	size_t pg = t_page();
	mpk_domain *d = mpk_domain_create("audit-late", MPK_RW, 0);
	REQUIRE(d);
	REQUIRE(mpk_lockdown(MPK_LOCK_ERRNO) == 0);
	char *p = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(p != MAP_FAILED);
	REQUIRE(mpk_adopt(d, p, 2 * pg) == 0);
	expect_clean("adopted after lockdown");
	REQUIRE(mpk_free(d, p) == 0); /* kept reserved: the filter covers it */
	expect_clean("given back after lockdown");
	/* No exit handlers: LeakSanitizer's would trace, which the filter
	 * denies. */
	fflush(NULL);
	_exit(t_done());
}

static void scenario(void)
{
	size_t pg = t_page();
	int hw = t_backend() == MPK_BACKEND_HW;
	pthread_t t;
	void *ret;

	if (access("/proc/self/smaps", R_OK))
		t_skip("no /proc/self/smaps");
	expect_clean("no domain yet");
	mpk_domain *a = mpk_domain_create("audit-a", MPK_RW, 0);
	mpk_domain *b = mpk_domain_create("audit-b", MPK_NONE, 0);
	mpk_domain *r = mpk_domain_create("audit-r", MPK_READ, 0);
	mpk_domain *s = mpk_domain_create("audit-shared", MPK_RW, MPK_DOMAIN_SHARED);
	REQUIRE(a && b && r && s);
	char *pa = mpk_alloc(a, 3 * pg), *pb = mpk_alloc(b, pg), *pr = mpk_alloc(r, 5 * pg);
	char *ps = mpk_alloc(s, pg), *gone = mpk_alloc(a, 2 * pg);
	REQUIRE(pa && pb && pr && ps && gone);
	expect_clean("four domains");

	REQUIRE(mpk_set(a, MPK_READ) == 0 && mpk_set(b, MPK_RW) == 0 && mpk_set(r, MPK_NONE) == 0);
	expect_clean("rights changed");
	REQUIRE(mpk_set_all(s, MPK_READ) == 0);
	expect_clean("mpk_set_all");
	REQUIRE(pthread_create(&t, NULL, reader, r) == 0);
	REQUIRE(pthread_join(t, &ret) == 0 && ret == NULL);
	expect_clean("the reader thread gone");
	REQUIRE(mpk_free(a, gone) == 0);
	expect_clean("a region freed");

	/* adopted memory and a mapped file */
	char *ad = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(ad != MAP_FAILED && mpk_adopt(b, ad, 2 * pg) == 0);
	FILE *tf = tmpfile();
	REQUIRE(tf && ftruncate(fileno(tf), (off_t)pg) == 0);
	char *fm = mpk_map_file(b, fileno(tf), 0, pg);
	REQUIRE(fm);
	fm[0] = 1;
	expect_clean("adopted and file");

	/* heaps, a guarded heap, a secret, code */
	mpk_heap *h = mpk_heap_create(a, 0), *hg = mpk_heap_create(b, MPK_HEAP_GUARDED);
	REQUIRE(h && hg);
	void *blk[64];
	for (int i = 0; i < 64; i++)
		REQUIRE((blk[i] = mpk_heap_malloc(i & 1 ? h : hg, (size_t)(16 << (i % 12)))));
	for (int i = 0; i < 64; i += 3)
		REQUIRE(mpk_heap_free(i & 1 ? h : hg, blk[i]) == 0);
	void *sec = mpk_secret_alloc(r, 32);
	if (!sec)
		printf("no secret (%s): the vault is left out\n", strerror(errno));
	mpk_domain *c = mpk_domain_create("audit-code", MPK_RW, 0);
	REQUIRE(c);
	unsigned char *code = mpk_code_alloc(c, pg);
	REQUIRE(code);
	code[0] = 0xc3; /* ret */
	REQUIRE(mpk_set(c, MPK_READ) == 0);
	((void (*)(void))code)();
	expect_clean("heaps, secret, code");

	/* more domains than keys: on hw some go without, and come back */
	mpk_domain *many[20];
	for (int i = 0; i < 20; i++) {
		char name[32];
		snprintf(name, sizeof(name), "audit-many-%d", i);
		REQUIRE((many[i] = mpk_domain_create(name, i % 3 ? MPK_RW : MPK_NONE, 0)));
		REQUIRE(mpk_alloc(many[i], pg));
	}
	for (int i = 0; i < 20; i++)
		REQUIRE(mpk_set(many[i], MPK_READ) == 0);
	expect_clean("twenty more domains");
	if (hw)
		printf("keys in use with %d domains: %d\n", 25, mpk_domain_key(many[0]) >= 0);
	for (int i = 0; i < 20; i += 2)
		REQUIRE(mpk_domain_destroy(many[i]) == 0);
	expect_clean("ten destroyed");

	/* a thread flipping its rights all the time */
	flip_d = b;
	atomic_store(&flip_stop, 0);
	REQUIRE(pthread_create(&t, NULL, flipper, NULL) == 0);
	for (int i = 0; i < 50; i++)
		expect_clean("while another thread flips its rights");
	atomic_store(&flip_stop, 1);
	REQUIRE(pthread_join(t, &ret) == 0 && ret == NULL);

	if (sec)
		REQUIRE(mpk_secret_free(sec) == 0);
	REQUIRE(mpk_heap_destroy(h) == 0 && mpk_heap_destroy(hg) == 0);
	expect_clean("heaps destroyed");

	const char *why = t_lockdown_absent(MPK_LOCK_ERRNO);
	if (why)
		printf("lockdown part left out: %s\n", why);
	else
		t_in_child(lockdown_kept, "after lockdown");
}

int main(void)
{
	return t_both_backends(scenario);
}
