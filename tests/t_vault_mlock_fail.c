/*
 * When the kernel will not lock more memory (RLIMIT_MEMLOCK, in a child
 * that dropped CAP_IPC_LOCK, which root has and which ignores the limit),
 * mpk_secret_alloc() fails with the kernel's errno: ENOMEM past the limit
 * (before: EPERM for every mlock() failure), EPERM only with a limit of 0.
 * It locks and maps nothing more; every secret allocated before is intact
 * and still closed to the thread; secrets that fit in pages already locked
 * still come; freeing makes room again.  That is ordinary vault memory
 * (MPKIT_SECRETMEM=off).  memfd_secret memory is charged to the limit
 * when it is mapped, and a vault maps it as it takes pages (doubling), not
 * a chunk (1 MiB) at a time: twenty domains with a secret each fit in 512
 * KiB (none did before), and at the limit ENOMEM, the secrets before it
 * intact and nothing more locked.
 */
#include "t_heap.h"

#define KiB 1024

enum { MAXS = 1000 };
static unsigned char *s[MAXS];

static void limited(void)
{
	int n = 0;

	t_drop_ipc_lock();
	t_limit(RLIMIT_MEMLOCK, 64 * KiB);
	mpk_domain *d = mpk_domain_create("vault-mlock", MPK_NONE, 0);
	REQUIRE(d);
	unsigned char *small = mpk_secret_alloc(d, 32);
	REQUIRE(small);
	while (n < MAXS && (s[n] = mpk_secret_alloc(d, 3000)))
		n++;
	CHECK(n > 0 && n < MAXS);
	CHECK(errno == ENOMEM);
	long lck = t_locked_kib();
	size_t vs = t_vsize();
	CHECK(lck > 0 && lck <= 64);

	/* At the limit: anything needing new pages fails the same way. */
	CHECK_ERR(mpk_secret_alloc(d, 3000), ENOMEM);
	CHECK_ERR(mpk_secret_alloc(d, 20000), ENOMEM);
	CHECK_ERR(mpk_secret_alloc(d, 50000), ENOMEM);
	CHECK_ERR(mpk_secret_alloc(d, 700000), ENOMEM);
	CHECK(t_locked_kib() == lck && t_vsize() == vs);
	CHECK(mpk_get(d) == MPK_NONE);

	/* ... but small secrets fit in the page already locked. */
	unsigned char *more = mpk_secret_alloc(d, 32);
	CHECK(more != NULL);

	/* Nothing lost: all intact (each holds its index), all closed. */
	MPK_WITH(d, MPK_RW) {
		for (int i = 0; i < n; i++)
			memset(s[i], i & 0xff, 3000);
	}
	CHECK_FAULT(t_read_in_child(s[0]), d, s[0]);
	CHECK_FAULT(t_write_in_child(s[n - 1] + 2999), d, s[n - 1] + 2999);
	MPK_WITH(d, MPK_READ) {
		for (int i = 0; i < n; i++)
			if (s[i][0] != (i & 0xff) || s[i][2999] != (i & 0xff))
				t_fail("secret %d damaged", i);
	}

	/* Freeing all of them lets a big one be locked. */
	for (int i = 0; i < n; i++)
		CHECK(mpk_secret_free(s[i]) == 0);
	unsigned char *big = mpk_secret_alloc(d, 40 * KiB);
	CHECK(big != NULL);
	CHECK(mpk_secret_free(big) == 0 && mpk_secret_free(small) == 0 &&
	      mpk_secret_free(more) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
}

/* No locking at all: the kernel says EPERM (it needs CAP_IPC_LOCK), and
 * so does the call; nothing is left locked or mapped. */
static void unlockable(void)
{
	t_drop_ipc_lock();
	t_limit(RLIMIT_MEMLOCK, 0);
	mpk_domain *d = mpk_domain_create("vault-nolock", MPK_NONE, 0);
	REQUIRE(d);
	CHECK_ERR(mpk_secret_alloc(d, 32), EPERM);
	size_t vs = t_vsize(); /* what mpkit reserved for itself may stay */
	CHECK_ERR(mpk_secret_allocarray(d, 100, 700), EPERM);
	CHECK_ERR(mpk_secret_alloc(d, 32), EPERM);
	CHECK(t_locked_kib() == 0 && t_vsize() == vs);
	CHECK(mpk_get(d) == MPK_NONE);
	CHECK(mpk_domain_destroy(d) == 0);
}

/* Secrets of 3000 bytes in d until the limit: each written with its
 * number; ENOMEM at the end, nothing more locked; all read back. */
static void to_the_limit(mpk_domain *d)
{
	int n = 0;
	size_t locked = 0;

	while (n < MAXS && (s[n] = mpk_secret_alloc(d, 3000))) {
		REQUIRE(mpk_secret_readwrite(s[n]) == 0);
		memset(s[n], n & 0xff, 3000);
		REQUIRE(mpk_secret_noaccess(s[n]) == 0);
		locked = t_locked_kib();
		n++;
	}
	CHECK(n < MAXS && errno == ENOMEM);
	CHECK(n > 100); /* the limit's worth, 512 KiB, in 3000-byte secrets */
	CHECK_ERR(mpk_secret_alloc(d, 3000), ENOMEM);
	CHECK(t_locked_kib() == (long)locked && locked <= 512);
	REQUIRE(mpk_set(d, MPK_READ) == 0);
	for (int i = 0; i < n; i++)
		CHECK(s[i][0] == (i & 0xff) && s[i][2999] == (i & 0xff));
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	for (int i = 0; i < n; i++)
		CHECK(mpk_secret_free(s[i]) == 0);
	unsigned char *again = mpk_secret_alloc(d, 3000); /* room again */
	CHECK(again && mpk_secret_free(again) == 0);
}

/* memfd_secret: charged when mapped, where the kernel marks the mapping
 * locked (lo); kernels that do not (6.1) keep the pages unevictable
 * without charging the limit. */
static void secret_limited(void)
{
	enum { ND = 20 };
	mpk_domain *d[ND];
	unsigned char *k[ND];

	t_drop_ipc_lock();
	t_limit(RLIMIT_MEMLOCK, 512 * KiB);
	for (int i = 0; i < ND; i++) {
		REQUIRE(d[i] = mpk_domain_create("vault-slimit", MPK_NONE, 0));
		REQUIRE(k[i] = mpk_secret_alloc(d[i], 32));
	}
	if (t_vmflag(k[0], "lo")) {
		CHECK(t_locked_kib() >= ND * 4 && t_locked_kib() <= ND * 8);
		to_the_limit(d[1]);
	} else {
		CHECK(t_locked_kib() == 0);
	}
	for (int i = 0; i < ND; i++) {
		CHECK(mpk_secret_readonly(k[i]) == 0 && k[i][0] == 0 && k[i][31] == 0);
		CHECK(mpk_secret_noaccess(k[i]) == 0);
		CHECK(mpk_secret_free(k[i]) == 0);
		CHECK(mpk_domain_destroy(d[i]) == 0);
	}
}

int main(void)
{
	struct mpk_info in;

	t_backend();
	REQUIRE(mpk_info(&in) == 0);
	if (in.secretmem_vaults)
		t_in_child(secret_limited, "child with memfd_secret vaults");
	t_setenv("MPKIT_SECRETMEM", "off");
	t_in_child(limited, "limited child");
	t_in_child(unlockable, "child without locking");
	return t_done();
}
