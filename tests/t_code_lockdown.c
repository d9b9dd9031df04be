/*
 * JIT code after mpk_lockdown() (hw and soft): code memory from
 * mpk_code_alloc(), made before lockdown and after it, is written inside
 * MPK_WITH(jit, MPK_RW) and run, 20 times over (soft: each write window
 * flips the pages r-x -> rw- -> r-x with PROT_EXEC, which the filter lets
 * through from mpkit's own site on domain memory only).  Anyone else's
 * PROT_EXEC stays denied (EPERM): mprotect of that code, of other memory,
 * a new executable mapping.  A stray write still faults (hw: SEGV_PKUERR
 * with the domain's key; soft: SEGV_ACCERR).
 */
#include "t_code.h"
#include "t_pit.h"

static void write_code(void *p)
{
	t_touch_write(p);
}

int main(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	mpk_domain *jit;
	uint8_t *before, *after;

	t_need_lockdown(MPK_LOCK_ERRNO);
	REQUIRE((jit = mpk_domain_create("jit", MPK_READ, MPK_DOMAIN_SHARED)));
	REQUIRE((before = mpk_code_alloc(jit, page)));
	t_segv_recorder_install(); /* for t_run_child() after the lockdown */
	REQUIRE(mpk_lockdown(MPK_LOCK_ERRNO) == 0);
	after = mpk_code_alloc(jit, page);
	if (!after)
		t_fail("mpk_code_alloc after lockdown: %s", strerror(errno));

	for (uint32_t i = 1; i <= 20; i++) {
		MPK_WITH(jit, MPK_RW) {
			t_emit_ret(before, i);
			if (after)
				t_emit_ret(after, 1000 + i);
		}
		__builtin___clear_cache((char *)before, (char *)before + 16);
		if (((t_fn)before)() != (int)i)
			t_fail("round %u: code made before lockdown returned the wrong value", i);
		if (after && ((t_fn)after)() != (int)(1000 + i))
			t_fail("round %u: code made after lockdown returned the wrong value", i);
	}

	/* Others: no new code, not even on mpkit's code memory. */
	CHECK_ERR(mprotect(before, page, PROT_READ | PROT_WRITE | PROT_EXEC), EPERM);
	void *mine = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(mine != MAP_FAILED);
	CHECK_ERR(mprotect(mine, page, PROT_READ | PROT_EXEC), EPERM);
	CHECK(t_mmap_sys(NULL, page, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) ==
		      MAP_FAILED && errno == EPERM);
	/* A stray write to the code still faults. */
	struct t_fault f = t_run_child(write_code, before);
	CHECK(f.faulted);
	CHECK(f.where == before);
	if (mpk_domain_key(jit) >= 0)
		CHECK(f.code == SEGV_PKUERR && f.pkey == mpk_domain_key(jit));
	else
		CHECK(f.code == SEGV_ACCERR);
	t_exit_locked();
}
