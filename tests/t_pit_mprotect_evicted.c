/* Pitfall: a domain that lost its key to eviction is protected by
 * mprotect(): a plain mprotect(PROT_READ) opens it (on soft, always).
 * After lockdown mprotect() of domain memory is denied: EPERM; munmap and
 * mmap(MAP_FIXED) over it too. */
#include "t_pit.h"

static void evict(void)
{
	if (t_backend() != MPK_BACKEND_HW)
		return;
	/* one key: another domain in use takes the secret's */
	REQUIRE(mpk_set_key_budget(1) == 0);
	mpk_domain *o = mpk_domain_create("other", MPK_RW, 0);
	REQUIRE(o && mpk_alloc(o, 4096));
	REQUIRE(mpk_domain_key(pit_dom) < 0);
}

static int attempt(void)
{
	char buf[64] = { 0 };
	if (mpk_domain_key(pit_dom) >= 0)
		return O_ERROR;
	if (mprotect(pit_secret, 4096, PROT_READ))
		return pit_copy_outcome(-1, errno, buf);
	memcpy(buf, pit_secret, sizeof(PIT_SECRET));
	return pit_copy_outcome(0, 0, buf);
}

static int attempt_all(void)
{
	int o = attempt();
	if (o != O_EPERM)
		return o;
	/* the other calls that change domain memory, after lockdown */
	if (munmap(pit_secret, 4096) == 0 || errno != EPERM)
		return O_ERROR;
	if (mmap(pit_secret, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) !=
		    MAP_FAILED || errno != EPERM)
		return O_ERROR;
	if (madvise(pit_secret, 4096, MADV_DONTNEED) == 0 || errno != EPERM)
		return O_ERROR;
	if (mremap(pit_secret, 4096, 8192, MREMAP_MAYMOVE) != MAP_FAILED || errno != EPERM)
		return O_ERROR;
	return O_EPERM;
}

int main(void)
{
	struct pit p = { "evicted/soft + mprotect", attempt_all, evict, MPK_LOCK_ERRNO,
			 { B(O_LEAKED), B(O_LEAKED) }, { B(O_EPERM), B(O_EPERM) }, NULL };
	return pit_main(&p);
}
