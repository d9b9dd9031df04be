/*
 * After mpk_lockdown(), calls that fail leave the process as it was too
 * (t_snap.h: no filter stacked, no handler, domain, key or mapping more or
 * less): a second lockdown (EALREADY), the first watch of a read-only
 * range (EINVAL), adopting domain memory (EINVAL); on hw, where
 * MPK_LOCK_SEAL seals mpk_alloc() memory of keyed domains (Linux 6.10+:
 * the 6.12 VM), freeing sealed
 * memory (EPERM) and destroying its domain (EBUSY), which has an empty
 * vault that stays (a destroy that succeeds takes it).  Each backend in a
 * child of its own: lockdown is for good.
 */
#include "t_heap.h"
#include "t_snap.h"

static void on_hit(const struct mpk_watch_hit *h, void *arg)
{
	(void)h;
	(void)arg;
}

static void scenario(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	bool hw = t_backend() == MPK_BACKEND_HW;

	mpk_domain *d = mpk_domain_create("locked", MPK_RW, 0);
	REQUIRE(d);
	unsigned char *m = mpk_alloc(d, page);
	REQUIRE(m);
	REQUIRE(mpk_secret_free(mpk_secret_alloc(d, 32)) == 0);
	unsigned char *ro = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(ro != MAP_FAILED);
	if (mpk_lockdown(MPK_LOCK_ERRNO | MPK_LOCK_SEAL)) {
		if (errno == ENOTSUP)
			t_skip("no seccomp here");
		REQUIRE(!"mpk_lockdown");
	}

	FAILS_CLEANLY(EALREADY, mpk_lockdown(MPK_LOCK_ERRNO));
	FAILS_CLEANLY(EINVAL, mpk_watch(ro, 8, MPK_WATCH_WRITE, on_hit, NULL));
	FAILS_CLEANLY(EINVAL, mpk_adopt(d, m, page));
	if (hw && t_vmflag(m, "sl")) { /* sealed: Linux 6.10+ */
		FAILS_CLEANLY(EPERM, mpk_free(d, m));
		FAILS_CLEANLY(EBUSY, mpk_domain_destroy(d));
		printf("t_fail_locked: sealed memory: free and destroy refused, nothing changed\n");
	} else if (hw) {
		printf("t_fail_locked: no mseal() here: the sealed cases did not run\n");
	}
	m[0] = 1;
	CHECK(mpk_lockdown_flags() == (int)(MPK_LOCK_ERRNO | MPK_LOCK_SEAL));
	/* No exit handlers: LeakSanitizer's would ptrace, which is denied. */
	int rc = t_done();
	fflush(NULL);
	_exit(rc);
}

int main(void)
{
	t_soft_scenario = scenario;
	t_in_child(t_soft_variant, "soft variant");
	if (t_backend() == MPK_BACKEND_HW)
		t_in_child(scenario, "hw variant");
	return t_done();
}
