/*
 * mlock() is not inherited by fork(): a forked child's first new secret is
 * locked all the same, and so are the pages of the secrets it inherited
 * (small, page-run and own-region ones), from that call on.  A child that
 * cannot lock (RLIMIT_MEMLOCK, no CAP_IPC_LOCK) gets EPERM, as a parent
 * would, and no secret from an unlocked page.  This is ordinary vault
 * memory (MPKIT_SECRETMEM=off): memfd_secret pages are locked by the
 * kernel, which refuses mlock() on them, in every process.
 */
#include "t_heap.h"

static unsigned char *s[3];
static const size_t n[3] = { 32, 50000, 700000 };
static mpk_domain *d;

/* The page of p is in a locked mapping, by both of smaps' accounts. */
static int locked(const void *p)
{
	return t_vmflag(p, "lo") && t_locked_kb(p) > 0;
}

static void child(void)
{
	unsigned char *x = mpk_secret_alloc(d, 32);

	REQUIRE(x);
	CHECK(locked(x));
	for (int i = 0; i < 3; i++)
		CHECK(locked(s[i]) && locked(s[i] + n[i] - 1));
	MPK_WITH(d, MPK_RW) {
		memset(x, 0x55, 32);
	}
	CHECK(mpk_secret_free(x) == 0);
}

static void child_cannot_lock(void)
{
	t_drop_ipc_lock();
	t_limit(RLIMIT_MEMLOCK, 0);
	CHECK_ERR(mpk_secret_alloc(d, 32), EPERM);
	CHECK_ERR(mpk_secret_alloc(d, 32), EPERM); /* still, not half done */
}

int main(void)
{
	t_setenv("MPKIT_SECRETMEM", "off");
	t_backend();
	t_need_memlock(2 << 20);
	REQUIRE(d = mpk_domain_create("vault-fork-lock", MPK_NONE, 0));
	for (int i = 0; i < 3; i++)
		REQUIRE(s[i] = mpk_secret_alloc(d, n[i]));
	for (int i = 0; i < 3; i++)
		CHECK(locked(s[i]));
	t_in_child(child, "child allocating a secret");
	t_in_child(child_cannot_lock, "child that cannot lock");
	/* The parent's stay locked, and it goes on as before. */
	for (int i = 0; i < 3; i++)
		CHECK(locked(s[i]));
	unsigned char *y = mpk_secret_alloc(d, 32);
	CHECK(y && locked(y));
	CHECK(mpk_secret_free(y) == 0);
	for (int i = 0; i < 3; i++)
		CHECK(mpk_secret_free(s[i]) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
