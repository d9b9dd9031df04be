/*
 * hw: mpk_set_all() reaches a thread that is inside a signal handler: the
 * rights hold for the thread's own code after the handler returns (before,
 * only the handler's PKRU was edited).  Thread T holds READ to D, parked
 * in a SIGUSR1 handler (t_parked.h); main calls mpk_set_all(D, RW): after
 * the handler T holds RW and writes.  Then again with mpk_set_all(D,
 * MPK_NONE): after the handler a read of T faults (SEGV_PKUERR, D's key).
 */
#include "t_parked.h"

static mpk_domain *D;
static unsigned char *pd;

static void t_reads_d(void)
{
	REQUIRE(mpk_set(D, MPK_READ) == 0);
}

static void after_rw(void)
{
	CHECK(mpk_get(D) == MPK_RW);
	CHECK_NO_FAULT(t_write_in_child(pd + 1));
	if (mpk_get(D) == MPK_RW) /* else the checks above failed */
		pd[2] = 2;
}

static void after_none(void)
{
	CHECK(mpk_get(D) == MPK_NONE);
	CHECK_FAULT(t_read_in_child(pd + 3), D, pd + 3);
}

int main(void)
{
	t_need_hw();
	REQUIRE(D = mpk_domain_create("D", MPK_RW, 0));
	REQUIRE(pd = mpk_alloc(D, 4096));
	REQUIRE(mpk_domain_key(D) > 0);

	t_park_start(t_reads_d, after_rw);
	t_park_enter();
	REQUIRE(mpk_set_all(D, MPK_RW) == 0);
	t_park_release();
	CHECK(pd[2] == 2);

	t_park_start(t_reads_d, after_none);
	t_park_enter();
	REQUIRE(mpk_set_all(D, MPK_NONE) == 0);
	t_park_release();
	CHECK(mpk_get(D) == MPK_NONE);
	return t_done();
}
