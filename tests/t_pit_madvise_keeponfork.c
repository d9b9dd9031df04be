/* Pitfall: MADV_KEEPONFORK undoes a vault's WIPEONFORK, and a forked child
 * (which may open the domain: it is the same program) reads the secret.
 * After lockdown MADV_KEEPONFORK is denied everywhere: EPERM.  A
 * memfd_secret vault (mpk_info().secretmem_vaults) is never copied into a
 * child (MADV_DONTFORK), which maps it afresh: no effect. */
#include "t_pit.h"

static unsigned char *vs;

static void setup(void)
{
	vs = mpk_secret_alloc(pit_dom, 64);
	REQUIRE(vs);
	MPK_WITH(pit_dom, MPK_RW) memcpy(vs, PIT_SECRET, sizeof(PIT_SECRET));
}

static int attempt(void)
{
	char buf[64] = { 0 };
	void *page = (void *)((uintptr_t)vs & ~(uintptr_t)4095);
	if (madvise(page, 4096, MADV_KEEPONFORK))
		return pit_copy_outcome(-1, errno, buf);
	/* The attack is a fork() of the program itself: its own, not t_child(). */
	pid_t c = fork();
	if (c == 0) {
		MPK_WITH(pit_dom, MPK_READ) memcpy(buf, vs, sizeof(PIT_SECRET));
		_exit(pit_copy_outcome(0, 0, buf));
	}
	int st;
	waitpid(c, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : O_ERROR;
}

int main(void)
{
	struct mpk_info in;
	unsigned before = !mpk_info(&in) && in.secretmem_vaults ? B(O_KEPT) : B(O_LEAKED);
	struct pit p = { "MADV_KEEPONFORK + fork", attempt, setup, MPK_LOCK_ERRNO,
			 { before, before }, { B(O_EPERM), B(O_EPERM) }, NULL };
	return pit_main(&p);
}
