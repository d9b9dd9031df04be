/*
 * Where the kernel has no memfd_secret (before 5.14, or 5.14 to 6.4
 * booted without secretmem.enable=1; on a kernel that has it, a child
 * whose seccomp filter answers ENOSYS for it stands in), nothing is
 * silent: mpk_info() says secrets are not kept from the kernel and why,
 * vaults fall back to ordinary memory (wiped in a child: VmFlags wf),
 * MPKIT_SECRETMEM=require makes mpk_secret_alloc() fail with EOPNOTSUPP
 * instead, with nothing allocated, and MPK_DOMAIN_SECRETMEM domains are
 * not created (EOPNOTSUPP).
 */
#define _GNU_SOURCE
#include "t_heap.h"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#define MEMFD_SECRET 447 /* x86_64 */

/* memfd_secret answers ENOSYS, as on a kernel without it. */
static void hide_memfd_secret(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MEMFD_SECRET, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(*f), f };

	REQUIRE(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
	REQUIRE(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0);
}

static void scenario(void)
{
	struct mpk_info in;

	REQUIRE(mpk_info(&in) == 0);
	CHECK(!in.secretmem && !in.secretmem_vaults && in.secretmem_errno == ENOSYS);
	int domains = in.domains;
	CHECK_ERR(mpk_domain_create("kexcl", MPK_NONE, MPK_DOMAIN_SECRETMEM), EOPNOTSUPP);
	REQUIRE(mpk_info(&in) == 0);
	CHECK(in.domains == domains);

	/* Degraded, and said so: ordinary vault memory. */
	mpk_domain *d = mpk_domain_create("vault-fallback", MPK_NONE, 0);
	REQUIRE(d);
	unsigned char *s = mpk_secret_alloc(d, 32);
	REQUIRE(s);
	CHECK(t_vmflag(s, "wf") && t_vmflag(s, "dd") && !t_vmflag(s, "dc"));
	CHECK(mpk_secret_free(s) == 0);

	/* Told not to degrade: EOPNOTSUPP, nothing mapped. */
	t_setenv("MPKIT_SECRETMEM", "require");
	mpk_domain *e = mpk_domain_create("vault-require", MPK_NONE, 0);
	REQUIRE(e);
	size_t vs = t_vsize();
	CHECK_ERR(mpk_secret_alloc(e, 32), EOPNOTSUPP);
	CHECK_ERR(mpk_secret_alloc(e, 700000), EOPNOTSUPP);
	CHECK(t_vsize() == vs);
	CHECK(mpk_get(e) == MPK_NONE);
	CHECK(mpk_domain_destroy(e) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
}

static void hidden(void)
{
	hide_memfd_secret();
	scenario();
}

int main(void)
{
	struct mpk_info in;

	t_backend();
	t_need_memlock(2 << 20);
	REQUIRE(mpk_info(&in) == 0);
	if (in.secretmem)
		t_in_child(hidden, "child without memfd_secret (seccomp)");
	else if (in.secretmem_errno == ENOSYS)
		t_in_child(scenario, "this kernel, without memfd_secret");
	else
		t_skip("memfd_secret is refused here, not missing: see mpkit info");
	return t_done();
}
