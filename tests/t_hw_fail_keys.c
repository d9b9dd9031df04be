/*
 * hw: a call that takes a hardware key and then fails gives it back, so
 * the keys mpkit holds, the keys the kernel has free and the caller's
 * PKRU are as before (t_snap.h).  mpk_set(d, MPK_RW) on a virtual domain
 * (no key: the budget was full at its creation) when a key is free again
 * but moving d's pages to it fails, and so does the mprotect() that would
 * open d without a key: -1/ENOMEM, d still keyless and closed, no key kept
 * as a spare.  mpk_domain_create(MPK_DOMAIN_SHARED) while a thread keeps
 * SIGRTMAX-2 blocked: EAGAIN, no domain, no key; the blocked thread,
 * unblocked, holds nothing of it.  mpk_exec_only() while mpkit holds every
 * key, when its mprotect() fails after a domain gave its key back to the
 * kernel for it: -1/ENOMEM, the range as it was (read-write, key 0), the
 * key held by mpkit again.
 */
#include <pthread.h>

#include "t_snap.h"
#include "../src/core/testing.h"

static int cmd[2], ans[2];

/* Its PKRU, then SIGRTMAX-2 blocked until told; unblocked, its PKRU. */
static void *blocker(void *arg)
{
	struct mpk_info i;
	sigset_t s;
	char c;
	uint32_t r;

	(void)arg;
	REQUIRE(mpk_info(&i) == 0); /* registered with mpkit too */
	r = i.pkru;
	sigemptyset(&s);
	sigaddset(&s, SIGRTMAX - 2);
	REQUIRE(pthread_sigmask(SIG_BLOCK, &s, NULL) == 0);
	REQUIRE(write(ans[1], &r, sizeof(r)) == (ssize_t)sizeof(r));
	REQUIRE(read(cmd[0], &c, 1) == 1);
	REQUIRE(pthread_sigmask(SIG_UNBLOCK, &s, NULL) == 0);
	REQUIRE(mpk_info(&i) == 0);
	r = i.pkru;
	REQUIRE(write(ans[1], &r, sizeof(r)) == (ssize_t)sizeof(r));
	return NULL;
}

static int idle_cmd[2];

static void *idle(void *arg)
{
	char c;
	REQUIRE(read(idle_cmd[0], &c, 1) == 1);
	return arg;
}

int main(void)
{
	struct mpk_info in;
	pthread_t other;

	t_need_hw();
	/* A thread closed to a, which main opens: a cannot be evicted. */
	REQUIRE(pipe(idle_cmd) == 0 && pthread_create(&other, NULL, idle, NULL) == 0);
	mpk_domain *a = mpk_domain_create("keys-a", MPK_RW, 0);
	REQUIRE(a);
	REQUIRE(mpk_info(&in) == 0);
	REQUIRE(mpk_set_key_budget(in.keys_in_use) == 0);
	mpk_domain *d = mpk_domain_create("keys-virtual", MPK_NONE, 0);
	REQUIRE(d);
	CHECK_ERR(mpk_domain_key(d), ENOENT);
	unsigned char *p = mpk_alloc(d, 4096);
	REQUIRE(p);
	/* This thread's table of soft rights, made once (a cache): rights
	 * to a domain that stays keyless, no key being free. */
	mpk_domain *w = mpk_domain_create("keys-warm", MPK_NONE, 0);
	REQUIRE(w && mpk_set(w, MPK_READ) == 0 && mpk_domain_key(w) == -1);
	REQUIRE(mpk_set(w, MPK_NONE) == 0 && mpk_domain_destroy(w) == 0);

	/* A key is free again; moving d to it fails, and so does opening d
	 * without one. */
	REQUIRE(mpk_set_key_budget(in.keys_in_use + 1) == 0);
	t_snap_begin();
	mpk__test_fail(MPK_OS_FAIL_MPROTECT, -1, ENOMEM); /* every mprotect()/pkey_mprotect() */
	CHECK_ERR(mpk_set(d, MPK_RW), ENOMEM);
	mpk__test_fail(MPK_OS_FAIL_MPROTECT, 0, 0);
	t_snap_end(T_SNAP_WORK, "mpk_set() of a virtual domain, every mprotect failing");
	CHECK_ERR(mpk_domain_key(d), ENOENT);
	CHECK(mpk_get(d) == MPK_NONE);
	CHECK_FAULT(t_read_in_child(p), d, p);
	/* Without the failures it wins the key, and opens. */
	CHECK(mpk_set(d, MPK_RW) == 0 && mpk_domain_key(d) > 0);
	p[0] = 1;
	CHECK(mpk_domain_destroy(d) == 0);

	/* A shared domain that a thread cannot be given. */
	pthread_t th;
	uint32_t was, is;
	REQUIRE(pipe(cmd) == 0 && pipe(ans) == 0);
	REQUIRE(pthread_create(&th, NULL, blocker, NULL) == 0);
	REQUIRE(read(ans[0], &was, sizeof(was)) == (ssize_t)sizeof(was));
	t_snap_begin();
	CHECK_ERR(mpk_domain_create("keys-shared", MPK_RW, MPK_DOMAIN_SHARED), EAGAIN);
	t_snap_end(T_SNAP_WORK, "mpk_domain_create(MPK_DOMAIN_SHARED), a thread blocking");
	REQUIRE(write(cmd[1], "u", 1) == 1);
	REQUIRE(read(ans[0], &is, sizeof(is)) == (ssize_t)sizeof(is));
	CHECK(is == was);
	pthread_join(th, NULL);

	REQUIRE(write(idle_cmd[1], "q", 1) == 1);
	pthread_join(other, NULL);
	t_snap_settle(1);

	/* Execute-only memory while mpkit holds every key: one goes back to
	 * the kernel for it, and when mprotect() then fails the range is as
	 * it was and the key is mpkit's again. */
	mpk_domain *all[15];
	int n = 0;
	REQUIRE(mpk_set_key_budget(15) == 0);
	while (mpk_info(&in) == 0 && in.keys_free > 0 && n < 15) {
		char name[16];
		snprintf(name, sizeof(name), "keys-%d", n);
		REQUIRE((all[n++] = mpk_domain_create(name, MPK_NONE, 0)));
	}
	CHECK(in.keys_free == 0);
	unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(code != MAP_FAILED);
	t_snap_begin();
	mpk__test_fail(MPK_OS_FAIL_MPROTECT, 2, ENOMEM); /* the second mprotect(PROT_EXEC) */
	CHECK_ERR(mpk_exec_only(code, 4096), ENOMEM);
	mpk__test_fail(MPK_OS_FAIL_MPROTECT, 0, 0);
	t_snap_end(T_SNAP_WORK, "mpk_exec_only(), every key held, mprotect failing after one went back");
	CHECK_ERR(mpk_exec_only_key(), ENOENT);
	code[0] = 1;
	CHECK(mpk_exec_only(code, 4096) == 0 && mpk_exec_only_key() > 0);
	while (n > 0)
		CHECK(mpk_domain_destroy(all[--n]) == 0);
	CHECK(mpk_domain_destroy(a) == 0);
	return t_done();
}
