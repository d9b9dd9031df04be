/* SPDX-License-Identifier: MIT */
/*
 * mpk_audit() reports each way a program can take domain memory's key or
 * protection away behind mpkit's back, with the range, the domain and what
 * was expected against what is there: mmap(MAP_FIXED) over a region,
 * mremap() of a region elsewhere (its range left unmapped), mprotect(),
 * pkey_mprotect() with key 0 (hw), and a mapping over memory mpkit keeps
 * reserved (a freed region).  Before any of it, nothing.  On soft the
 * MAP_FIXED lands on a closed domain (rw where --- is expected): without
 * keys a mapping with the protection the rights give looks the same.
 */
#include <sys/syscall.h>

#include "t.h"
#include "t_state.h"

#ifndef SYS_pkey_mprotect
#define SYS_pkey_mprotect 329
#endif

#define MAXE 16
static struct mpk_audit_entry e[MAXE];

/* The entry starting at p, else NULL. */
static const struct mpk_audit_entry *at(int n, const void *p)
{
	for (int i = 0; i < n && i < MAXE; i++)
		if (e[i].start == p)
			return &e[i];
	return NULL;
}

static void expect_entry(int n, const void *p, size_t len, mpk_domain *d, int ekey, int eprot, int fkey,
			 int fprot)
{
	const struct mpk_audit_entry *x = at(n, p);
	char line[256];

	if (!x) {
		t_fail("no mismatch reported at %p (%d in all)", p, n);
		return;
	}
	mpk_audit_format(x, line, sizeof(line));
	printf("  %s\n", line);
	CHECK((char *)x->end == (char *)p + len);
	CHECK(x->domain == d);
	CHECK(!strcmp(x->domain_name, d ? mpk_domain_name(d) : ""));
	CHECK(x->expected_key == ekey);
	CHECK(x->expected_prot == eprot);
	CHECK(x->found_prot == fprot);
	CHECK(x->found_key == fkey);
	CHECK(strstr(line, d ? mpk_domain_name(d) : "reserved by mpkit") != NULL);
}

static void scenario(void)
{
	size_t pg = t_page();
	int hw = t_backend() == MPK_BACKEND_HW;
	/* The key the kernel reports for pages without one: 0 where it
	 * reports keys at all (hw, or soft on a PKU kernel), else -1. */
	static char smaps[1 << 16];
	if (!t_read_file("/proc/self/smaps", smaps, sizeof(smaps)))
		t_skip("no /proc/self/smaps");
	int keys_shown = strstr(smaps, "ProtectionKey:") != NULL;
	int k0 = keys_shown ? 0 : -1;

	mpk_domain *open = mpk_domain_create("audit-open", MPK_RW, 0);
	mpk_domain *shut = mpk_domain_create("audit-shut", MPK_NONE, 0);
	REQUIRE(open && shut);
	int ko = hw ? mpk_domain_key(open) : 0, ks = hw ? mpk_domain_key(shut) : 0;
	REQUIRE(ko >= 0 && ks >= 0);
	char *a = mpk_alloc(open, 4 * pg), *s = mpk_alloc(shut, 2 * pg), *m = mpk_alloc(shut, 2 * pg);
	char *f = mpk_alloc(open, pg);
	REQUIRE(a && s && m && f);
	int prot_shut = hw ? PROT_READ | PROT_WRITE : PROT_NONE;
	CHECK(mpk_audit(e, MAXE) == 0);
	CHECK(mpk_audit(NULL, 0) == 0);

	/* mmap(MAP_FIXED) over the second page of the closed domain's region */
	REQUIRE(mmap(s + pg, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == s + pg);
	int n = mpk_audit(e, MAXE);
	CHECK(n == 1);
	expect_entry(n, s + pg, pg, shut, ks, prot_shut, k0, PROT_READ | PROT_WRITE);

	/* mremap() of a region elsewhere: its range holds nothing now */
	char *to = mmap(NULL, 2 * pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(to != MAP_FAILED);
	REQUIRE(mremap(m, 2 * pg, 2 * pg, MREMAP_MAYMOVE | MREMAP_FIXED, to) == to);
	n = mpk_audit(e, MAXE);
	CHECK(n == 2);
	expect_entry(n, m, 2 * pg, shut, ks, prot_shut, -1, -1);

	/* mprotect() of the open domain's third page to read-only */
	REQUIRE(mprotect(a + 2 * pg, pg, PROT_READ) == 0);
	n = mpk_audit(e, MAXE);
	CHECK(n == 3);
	expect_entry(n, a + 2 * pg, pg, open, ko, PROT_READ | PROT_WRITE, hw ? ko : k0, PROT_READ);

	/* pkey_mprotect() with key 0, rights unchanged: only the key says */
	if (hw) {
		REQUIRE(syscall(SYS_pkey_mprotect, a, pg, PROT_READ | PROT_WRITE, 0) == 0);
		n = mpk_audit(e, MAXE);
		CHECK(n == 4);
		expect_entry(n, a, pg, open, ko, PROT_READ | PROT_WRITE, 0, PROT_READ | PROT_WRITE);
	}

	/* a mapping over a freed region: mpkit keeps it reserved, PROT_NONE */
	REQUIRE(mpk_free(open, f) == 0);
	int before = mpk_audit(NULL, 0);
	REQUIRE(mmap(f, pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == f);
	n = mpk_audit(e, MAXE);
	CHECK(n == before + 1);
	expect_entry(n, f, pg, NULL, -1, PROT_NONE, k0, PROT_READ);

	/* fewer slots than mismatches: the count is all of them, the slots
	 * the first ones in address order, nothing written past them */
	struct mpk_audit_entry two[3];
	memset(two, 0x5a, sizeof(two));
	CHECK(mpk_audit(two, 2) == n);
	CHECK(two[0].start < two[1].start && two[0].start == e[0].start && two[1].start == e[1].start);
	CHECK(((unsigned char *)&two[2])[0] == 0x5a);

	/* the untouched pages of the same regions were never reported */
	CHECK(at(n, s) == NULL);
	CHECK(at(n, a + pg) == NULL && at(n, a + 3 * pg) == NULL);
}

int main(void)
{
	return t_both_backends(scenario);
}
