/*
 * Execute-only memory (mpk_exec_only).  hw: code made execute-only still
 * runs (returns 42), but reading it and writing it fault with SEGV_PKUERR
 * and si_pkey the kernel's execute-only key, which /proc/self/smaps shows
 * on the mapping and mpk_exec_only_key() reports, and which no domain
 * holds.  soft (forced, in a child): ENOTSUP, and the memory is left as it
 * was (read-write, contents kept), never silently readable "execute-only".
 */
#include "t_code.h"

static void scenario(void)
{
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(p != MAP_FAILED);
	t_emit_ret(p, 42);

	if (mpk_backend() != MPK_BACKEND_HW) {
		CHECK_ERR(mpk_exec_only(p, (size_t)page), ENOTSUP);
		CHECK_ERR(mpk_exec_only_key(), ENOENT);
		char perms[5];
		t_perms(p, perms);
		CHECK(!strcmp(perms, "rw-p"));
		CHECK_NO_FAULT(t_read_in_child(p));
		CHECK(p[0] == 0xb8);
		return;
	}
	mpk_domain *d = mpk_domain_create("data", MPK_RW, 0);
	REQUIRE(d);
	CHECK_ERR(mpk_exec_only_key(), ENOENT);
	REQUIRE(mpk_exec_only(p, (size_t)page) == 0);
	int k = mpk_exec_only_key();
	CHECK(k > 0 && k < 16);
	CHECK(k == t_vma_pkey(p));
	CHECK(k != mpk_domain_key(d));
	char perms[5];
	t_perms(p, perms);
	CHECK(!strcmp(perms, "--xp"));
	CHECK(((t_fn)p)() == 42);
	struct t_fault f = t_read_in_child(p + 1);
	CHECK(f.faulted && f.code == SEGV_PKUERR && f.pkey == k && f.where == p + 1);
	f = t_write_in_child(p);
	CHECK(f.faulted && f.code == SEGV_PKUERR && f.pkey == k);
	/* A second range reuses the kernel's key. */
	uint8_t *q = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(q != MAP_FAILED);
	t_emit_ret(q, 7);
	REQUIRE(mpk_exec_only(q, 1) == 0);
	CHECK(t_vma_pkey(q) == k && ((t_fn)q)() == 7);
	f = t_read_in_child(q);
	CHECK(f.faulted && f.code == SEGV_PKUERR && f.pkey == k);
	/* PROT_READ undoes it. */
	REQUIRE(mprotect(q, (size_t)page, PROT_READ | PROT_EXEC) == 0);
	CHECK_NO_FAULT(t_read_in_child(q));
	CHECK(mpk_domain_destroy(d) == 0);
}

int main(void)
{
	return t_both_backends(scenario);
}
