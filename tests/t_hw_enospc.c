/*
 * hw: mpkit coexists with a key the application took itself.  Domains are
 * created until the kernel runs out of keys: one more (taking no rights)
 * is a keyless domain (virtual domains) and takes no key and changes
 * nothing else (keys in use, existing protection).
 * The application's key is never handed out nor touched: its pages keep
 * it, its PKRU bits stay as the application set them, and write-disabling
 * it makes a write fault with SEGV_PKUERR and that key.
 */
#include "t.h"

#define MAXD 16

int main(void)
{
	mpk_domain *d[MAXD];
	unsigned char *m[MAXD];
	struct mpk_info in0, in1, in2;
	int n = 0;

	t_need_hw();
	/* The application's own key and page, before mpkit takes any. */
	int ak = (int)syscall(SYS_pkey_alloc, 0, 0);
	REQUIRE(ak > 0);
	unsigned char *ap = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(ap != MAP_FAILED);
	REQUIRE(syscall(SYS_pkey_mprotect, ap, 4096, PROT_READ | PROT_WRITE, ak) == 0);
	ap[0] = 0xa1;
	CHECK(pkey_get(ak) == 0);

	REQUIRE(mpk_info(&in0) == 0);
	CHECK(in0.keys_in_use == 0);
	for (;;) {
		char name[16];
		REQUIRE(n < MAXD);
		REQUIRE(mpk_info(&in1) == 0);
		if (in1.keys_free == 0)
			break;
		snprintf(name, sizeof(name), "fill-%d", n);
		errno = 0;
		d[n] = mpk_domain_create(name, MPK_RW, 0);
		if (!d[n])
			break;
		int k = mpk_domain_key(d[n]);
		CHECK(k > 0 && k < 16 && k != ak);
		for (int i = 0; i < n; i++)
			CHECK(mpk_domain_key(d[i]) != k);
		REQUIRE(m[n] = mpk_alloc(d[n], 4096));
		m[n][0] = (unsigned char)n;
		n++;
	}
	/* 15 keys, one is the application's; the budget (15) is not the limit. */
	CHECK(n >= 1 && n <= 14);
	printf("%d domains with keys\n", n);

	/* The failed create changed nothing. */
	REQUIRE(mpk_info(&in1) == 0);
	CHECK(in1.keys_in_use == n);
	CHECK(in1.domains == n);
	CHECK(in1.keys_free == 0);
	CHECK_KEYLESS_CREATE("one-more");
	REQUIRE(mpk_info(&in2) == 0);
	CHECK(in2.keys_in_use == n && in2.domains == n);

	/* Existing domains still work and still protect. */
	for (int i = 0; i < n; i++) {
		CHECK(m[i][0] == (unsigned char)i);
		m[i][1] = 1;
	}
	REQUIRE(mpk_set(d[0], MPK_NONE) == 0);
	CHECK_FAULT(t_read_in_child(m[0] + 5), d[0], m[0] + 5);
	REQUIRE(mpk_set(d[n - 1], MPK_READ) == 0);
	CHECK_FAULT(t_write_in_child(m[n - 1] + 6), d[n - 1], m[n - 1] + 6);

	/* The application's key: untouched, and still its own to use. */
	CHECK(pkey_get(ak) == 0);
	CHECK(ap[0] == 0xa1);
	ap[1] = 0xa2;
	REQUIRE(pkey_set(ak, PKEY_DISABLE_WRITE) == 0);
	CHECK(ap[1] == 0xa2); /* reading still allowed */
	struct t_fault f = t_write_in_child(ap + 2);
	CHECK(f.faulted && f.code == SEGV_PKUERR && f.pkey == ak &&
	      f.where == (void *)(ap + 2));
	REQUIRE(pkey_set(ak, PKEY_DISABLE_ACCESS) == 0);
	f = t_read_in_child(ap + 3);
	CHECK(f.faulted && f.code == SEGV_PKUERR && f.pkey == ak &&
	      f.where == (void *)(ap + 3));
	REQUIRE(pkey_set(ak, 0) == 0);
	ap[4] = 0xa4;

	/* A destroyed domain's key becomes available again. */
	int k0 = mpk_domain_key(d[0]);
	REQUIRE(mpk_domain_destroy(d[0]) == 0);
	REQUIRE(d[0] = mpk_domain_create("again", MPK_RW, 0));
	CHECK(mpk_domain_key(d[0]) == k0);
	CHECK_KEYLESS_CREATE("one-more");

	for (int i = 0; i < n; i++)
		CHECK(mpk_domain_destroy(d[i]) == 0);
	REQUIRE(mpk_info(&in2) == 0);
	CHECK(in2.keys_in_use == 0 && in2.domains == 0);
	CHECK(ap[4] == 0xa4);
	return t_done();
}
