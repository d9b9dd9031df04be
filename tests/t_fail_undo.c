/*
 * A call that fails after it began its work undoes all of it: the process
 * is as it was (t_snap.h; only the counters of system calls made may
 * move).  Failures come from mprotect()/pkey_mprotect() (the first, or
 * the second of two, fails: a test-only hook in the library), from domain
 * memory running out (a test-only cap on what mpkit maps), from mlock()
 * (RLIMIT_MEMLOCK, in a child without CAP_IPC_LOCK), and on hw from
 * pkey_alloc().  Covered: domain memory (alloc, adopt, map_file, code),
 * rights (set, enter, set_all, restore), the first watch of each kind
 * (its domain and its SIGSEGV and SIGTRAP handlers go again), unwatch
 * (the watch stays), execute-only memory, the first heap (its metadata
 * domain goes again), heap blocks, the first secret of a domain (its
 * vault goes again, and with it the metadata domain it made), and a
 * secret that makes more of its vault chunk live.  Both
 * backends; the heap metadata closed on both, so that it is a domain.
 */
#include <fcntl.h>

#include "t_heap.h"
#include "t_snap.h"
#include "../src/core/testing.h" /* fault injection, the window cap */

#define MiB ((size_t)1 << 20)

/* expr fails with ENOMEM when the nth mprotect() from now fails. */
#define FAILS_AT(nth, expr)                                                   \
	do {                                                                  \
		t_snap_begin();                                               \
		mpk__test_fail(MPK_OS_FAIL_MPROTECT, nth, ENOMEM);                   \
		CHECK_ERR(expr, ENOMEM);                                      \
		mpk__test_fail(MPK_OS_FAIL_MPROTECT, 0, 0);                          \
		t_snap_end(T_SNAP_WORK, #expr ", mprotect " #nth " failing");  \
	} while (0)

/* expr fails with E when mpkit may map at most room more bytes. */
#define FAILS_CAPPED(room, E, expr)                                           \
	do {                                                                  \
		t_snap_begin();                                               \
		mpk__window_test_cap(mpk__window_mapped() + (room));          \
		CHECK_ERR(expr, E);                                           \
		mpk__window_test_cap(0);                                      \
		t_snap_end(T_SNAP_WORK, #expr ", capped at " #room);          \
	} while (0)

static size_t page;

static void on_hit(const struct mpk_watch_hit *h, void *arg)
{
	(void)h;
	(void)arg;
}

/* The first secret of a domain, without memory to lock (mlock() of
 * ordinary vault memory: memfd_secret's limit is t_vault_mlock_fail's). */
static void no_memlock(void)
{
	t_setenv("MPKIT_SECRETMEM", "off");
	t_drop_ipc_lock();
	t_limit(RLIMIT_MEMLOCK, 0);
	mpk_domain *v = mpk_domain_create("undo-memlock", MPK_NONE, 0);
	REQUIRE(v);
	t_snap_begin();
	CHECK_ERR(mpk_secret_alloc(v, 32), EPERM);
	t_snap_end(T_SNAP_WORK, "mpk_secret_alloc(v, 32), no memory to lock");
	CHECK(mpk_domain_destroy(v) == 0);
}

/* A secret that needs more of its vault chunk made live (a run of 16
 * pages, its first secret having taken one), in a new vault each time,
 * with each of the first mprotect() calls it makes failing in turn
 * (metadata opens and closes on soft, and the one that makes the pages
 * live): it fails whole, or succeeds where that call's failure is one it
 * may ignore. */
static void grow_fails(void)
{
	for (int nth = 1; nth <= 10; nth++) {
		char what[80];
		mpk_domain *v = mpk_domain_create("undo-grow", MPK_NONE, 0);
		REQUIRE(v);
		void *first = mpk_secret_alloc(v, 32);
		REQUIRE(first);
		snprintf(what, sizeof(what), "a secret growing its chunk, mprotect %d failing", nth);
		t_snap_begin();
		mpk__test_fail(MPK_OS_FAIL_MPROTECT, nth, ENOMEM);
		errno = 0;
		void *p = mpk_secret_alloc(v, 64 << 10);
		int err = errno;
		mpk__test_fail(MPK_OS_FAIL_MPROTECT, 0, 0);
		if (p) {
			CHECK(mpk_secret_free(p) == 0);
		} else {
			CHECK(err == ENOMEM);
			t_snap_end(T_SNAP_WORK, what);
		}
		CHECK(mpk_secret_free(first) == 0 && mpk_domain_destroy(v) == 0);
	}
}

static void scenario(void)
{
	bool hw = t_backend() == MPK_BACKEND_HW;

	page = (size_t)sysconf(_SC_PAGESIZE);
	REQUIRE(setenv("MPKIT_HEAP_META", "closed", 1) == 0);
	mpk_domain *d = mpk_domain_create("undo", MPK_RW, 0);
	mpk_domain *n = mpk_domain_create("undo-closed", MPK_NONE, 0);
	mpk_domain *v = mpk_domain_create("undo-vault", MPK_NONE, 0);
	REQUIRE(d && n && v);
	unsigned char *m = mpk_alloc(d, page), *mn = mpk_alloc(n, page), *mn2 = mpk_alloc(n, page);
	REQUIRE(m && mn && mn2);
	m[0] = 7;
	unsigned char *plain = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(plain != MAP_FAILED);
	FILE *tf = tmpfile();
	REQUIRE(tf && ftruncate(fileno(tf), (off_t)page) == 0);
	/* What mpkit keeps once made, for reuse (this thread's table of
	 * soft rights, the heaps' table of chunk tags), made first. */
	REQUIRE(mpk_set(n, MPK_READ) == 0 && mpk_set(n, MPK_NONE) == 0);
	mpk_heap *warm = mpk_heap_create(d, 0);
	REQUIRE(warm);
	CHECK(mpk_heap_free(warm, mpk_heap_malloc(warm, 64)) == 0);
	CHECK(mpk_heap_destroy(warm) == 0);

	/* The first secret with no heap yet: the vault and the metadata
	 * domain come with it, and must go with it when it fails. */
	FAILS_CAPPED(4 * MiB + page, ENOMEM, mpk_secret_alloc(v, 32));
	t_in_child(no_memlock, "no memory to lock");
	/* The first heap: its metadata domain goes again. */
	FAILS_CAPPED(page, ENOMEM, mpk_heap_create(d, 0));

	/* Domain memory. */
	FAILS_CAPPED(0, ENOMEM, mpk_alloc(d, page));
	FAILS_CAPPED(0, ENOMEM, mpk_code_alloc(d, page));
	FAILS_AT(1, mpk_alloc(n, page));
	FAILS_AT(1, mpk_code_alloc(n, page));
	FAILS_AT(1, mpk_adopt(n, plain, 2 * page));
	FAILS_AT(1, mpk_map_file(n, fileno(tf), 0, page));
	CHECK(plain[0] == 0 && (plain[1] = 1) == 1);

	/* Rights, where they take mprotect(). */
	if (mpk_domain_key(n) < 0) {
		FAILS_AT(1, mpk_set(n, MPK_RW));
		FAILS_AT(2, mpk_set(n, MPK_READ));
		FAILS_AT(1, mpk_enter(n, MPK_READ).saved);
		/* A leave that fails keeps the scope (and the rights): it may
		 * be retried. */
		mpk_scope s = mpk_enter(n, MPK_RW);
		REQUIRE(s.domain == n);
		FAILS_AT(1, mpk_leave(&s));
		CHECK(s.domain == n && mpk_get(n) == MPK_RW);
		CHECK(mpk_leave(&s) == 0 && !s.domain && mpk_get(n) == MPK_NONE);
		FAILS_AT(2, mpk_set_all(n, MPK_RW));
		mpk_rights_t r;
		REQUIRE(mpk_set(n, MPK_RW) == 0 && mpk_rights_save(&r) == 0);
		REQUIRE(mpk_set(n, MPK_NONE) == 0);
		FAILS_AT(1, mpk_rights_restore(&r));
		FAILS_AT(2, mpk_rights_restore(&r));
		CHECK(mpk_rights_dispose(&r) == 0);
		CHECK(mpk_get(n) == MPK_NONE);
	}

	/* Watches: the first of each kind makes a domain and handlers. */
	FAILS_AT(1, mpk_watch(plain, 8, MPK_WATCH_WRITE, on_hit, NULL));
	FAILS_AT(2, mpk_watch(plain, 2 * page, MPK_WATCH_WRITE, on_hit, NULL));
	int id = mpk_watch(plain, 8, MPK_WATCH_WRITE, on_hit, NULL);
	REQUIRE(id >= 0);
	FAILS_AT(1, mpk_watch(plain + page, 8, MPK_WATCH_READ, on_hit, NULL));
	FAILS_AT(1, mpk_unwatch(id));
	CHECK(mpk_unwatch(id) == 0);
	CHECK(plain[0] == 0 && (plain[1] = 2) == 2);

	if (hw) {
		FAILS_AT(1, mpk_exec_only(plain, page));
		t_snap_begin();
		mpk__test_fail(MPK_OS_FAIL_PKEY_ALLOC, 1, ENOMEM);
		CHECK_ERR(mpk_domain_create("undo-nokey", MPK_RW, 0), ENOMEM);
		mpk__test_fail(MPK_OS_FAIL_PKEY_ALLOC, 0, 0);
		t_snap_end(T_SNAP_WORK, "mpk_domain_create(), pkey_alloc failing");
	}

	grow_fails();

	/* Heap blocks, with a heap in place. */
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h);
	void *b = mpk_heap_malloc(h, 64);
	REQUIRE(b);
	FAILS_CAPPED(0, ENOMEM, mpk_heap_malloc(h, MiB));
	FAILS_CAPPED(0, ENOMEM, mpk_heap_realloc(h, b, MiB));
	FAILS_CAPPED(0, ENOMEM, mpk_heap_aligned_alloc(h, 64 << 10, 200 << 10));
	CHECK(mpk_heap_free(h, b) == 0 && mpk_heap_destroy(h) == 0);

	CHECK(mpk_get(d) == MPK_RW && m[0] == 7);
	CHECK(mpk_domain_destroy(d) == 0 && mpk_domain_destroy(n) == 0 &&
	      mpk_domain_destroy(v) == 0);
	fclose(tf);
}

int main(void)
{
	return t_both_backends(scenario);
}
