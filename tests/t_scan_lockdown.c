/*
 * mpk_lockdown(MPK_LOCK_SCAN) in an ordinary glibc program: this test,
 * dynamically linked (t_scan_lockdown) and statically (the same code as
 * t_scan_lockdown_static).  glibc's pkey_set() and the lazy-binding
 * trampolines (_dl_runtime_resolve_xsave*, in ld.so, and in every static
 * glibc program too) are ROP-only: the scan reports them and locks.  A
 * program that also carries an inline gadget, a page of code that sets EAX
 * and runs WRPKRU or XRSTOR, is refused (EPERM) with nothing applied; with a
 * ROP-only page of its own (ld.so's sequence) it locks.
 */
#include "t_pit.h"
#include "scan.h"

struct count {
	int cls[4];
	bool trampoline;
};

static int note(const struct mpk_gadget *g, void *arg)
{
	struct count *c = arg;
	c->cls[g->cls & 3]++;
	c->trampoline |= g->cls == MPK_SITE_ROP && g->kind == MPK_GADGET_XRSTOR;
	return 0;
}

/* Code a child carries (NULL: none). */
struct plant {
	const unsigned char *code;
	size_t len;
};

/* In a child: carry code, scan, lock.  0 locked, 1 EPERM and nothing
 * applied, 2 anything else. */
static int try_lock(void *arg)
{
	const struct plant *c = arg;
	if (c->code && !pit_plant(c->code, c->len))
		return 2;
	if (!mpk_lockdown(MPK_LOCK_SCAN | MPK_LOCK_ERRNO))
		return mpk_lockdown_flags() == (MPK_LOCK_SCAN | MPK_LOCK_ERRNO) ? 0 : 2;
	return errno == EPERM && mpk_lockdown_flags() == -1 && prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1
		       ? 1 : 2;
}

static int in_child(const unsigned char *code, size_t len)
{
	struct plant c = { code, len };
	return t_child_status(try_lock, &c);
}

int main(void)
{
	/* xor %eax,%eax; xor %ecx,%ecx; xor %edx,%edx; wrpkru; ret */
	static const unsigned char wrpkru[] = { 0x31, 0xc0, 0x31, 0xc9, 0x31, 0xd2, 0x0f, 0x01, 0xef, 0xc3 };
	/* mov $0x200,%eax; xor %edx,%edx; xrstor (%rdi); ret */
	static const unsigned char xrstor[] = { 0xb8, 0x00, 0x02, 0x00, 0x00, 0x31, 0xd2, 0x0f, 0xae, 0x2f, 0xc3 };
	/* ld.so's: mov $0xee,%eax; xor %edx,%edx; xrstor 0x40(%rsp); ret */
	static const unsigned char ldso[] = { 0xb8, 0xee, 0x00, 0x00, 0x00, 0x31, 0xd2,
					      0x0f, 0xae, 0x6c, 0x24, 0x40, 0xc3 };
	struct count c = { { 0 }, false };
	struct mpk_scan_cb cb = { note, NULL, &c };

	long gadgets = mpk__scan_pid(0, &cb);
	REQUIRE(gadgets >= 0);
	printf("this process: %d mpkit sites, %d ROP-only, %d gadgets%s\n", c.cls[MPK_SITE_MPKIT],
	       c.cls[MPK_SITE_ROP], c.cls[MPK_SITE_GADGET],
	       c.trampoline ? " (an XRSTOR trampoline among the ROP-only)" : "");
	CHECK(gadgets == 0 && c.cls[MPK_SITE_GADGET] == 0);
	CHECK(c.cls[MPK_SITE_MPKIT] > 0);

	CHECK(in_child(wrpkru, sizeof(wrpkru)) == 1);
	CHECK(in_child(xrstor, sizeof(xrstor)) == 1);
	CHECK(in_child(ldso, sizeof(ldso)) == 0);
	CHECK(in_child(NULL, 0) == 0);

	REQUIRE(mpk_lockdown(MPK_LOCK_SCAN | MPK_LOCK_ERRNO) == 0);
	CHECK(mpk_lockdown_flags() == (MPK_LOCK_SCAN | MPK_LOCK_ERRNO));
	t_exit_locked();
}
