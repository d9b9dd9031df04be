/*
 * hw: a key revoked while a thread is inside a signal handler stays
 * revoked after the handler returns.  Thread T holds RW to D (key k) and
 * is parked in a SIGUSR1 handler (t_parked.h); main destroys D and creates
 * E, which gets key k again, RW for main only.  After the handler T holds
 * nothing of E: a read faults with SEGV_PKUERR and key k (before, only the
 * handler's PKRU was edited and sigreturn gave T its old RW on k back).
 */
#include "t_parked.h"

static mpk_domain *D, *E;
static unsigned char *pe;

static void t_writes_d(void)
{
	REQUIRE(mpk_set(D, MPK_RW) == 0);
}

static void after(void)
{
	CHECK(mpk_get(E) == MPK_NONE);
	CHECK_FAULT(t_read_in_child(pe + 1), E, pe + 1);
	CHECK_FAULT(t_write_in_child(pe + 2), E, pe + 2);
}

int main(void)
{
	t_need_hw();
	REQUIRE(D = mpk_domain_create("D", MPK_NONE, 0));
	REQUIRE(mpk_alloc(D, 4096));
	int k = mpk_domain_key(D);
	REQUIRE(k > 0);
	t_park_start(t_writes_d, after);
	t_park_enter();
	REQUIRE(mpk_domain_destroy(D) == 0);
	REQUIRE(E = mpk_domain_create("E", MPK_RW, 0));
	REQUIRE(pe = mpk_alloc(E, 4096));
	pe[1] = 1;
	CHECK(mpk_domain_key(E) == k); /* the kernel hands out the lowest */
	t_park_release();
	CHECK(pe[1] == 1);
	return t_done();
}
