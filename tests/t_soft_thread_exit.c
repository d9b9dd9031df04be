/* Soft backend: a thread that exits drops the rights it held.  Exiting
 * with RW while another thread holds READ leaves the memory read-only;
 * when the last holder exits it is closed.  A thread that never took
 * rights changes nothing by exiting. */
#include "t_state.h"
#include "t_agent.h"

int main(void)
{
	struct t_agent a, b, c;

	t_force_soft();
	mpk_domain *d = mpk_domain_create("exit", MPK_NONE, 0);
	REQUIRE(d);
	unsigned char *p = mpk_alloc(d, 2 * t_page());
	REQUIRE(p);

	t_agent_start(&a);
	t_agent_start(&b);
	t_agent_start(&c);
	REQUIRE(t_agent(&a, T_AG_SET, d, MPK_RW) == 0);
	REQUIRE(t_agent(&b, T_AG_SET, d, MPK_READ) == 0);
	CHECK_NO_FAULT(t_write_in_child(p));

	/* c never held anything */
	unsigned long long mp = t_mprotects();
	t_agent_stop(&c);
	CHECK(t_mprotects() == mp);
	CHECK_NO_FAULT(t_write_in_child(p + 1));

	/* a exits holding RW: b's READ is what is left */
	t_agent_stop(&a);
	CHECK_NO_FAULT(t_read_in_child(p));
	CHECK_FAULT(t_write_in_child(p + 2), d, p + 2);

	/* b exits inside a scope: it enters RW, then exits holding it */
	CHECK(t_agent(&b, T_AG_ENTER, d, MPK_RW) == MPK_READ);
	CHECK_NO_FAULT(t_write_in_child(p + 3));
	t_agent_stop(&b);
	CHECK_FAULT(t_read_in_child(p + 4), d, p + 4);
	CHECK_FAULT(t_write_in_child(p + 5), d, p + 5);

	/* A thread that exits holding rights to a destroyed domain takes
	 * nothing from the domain that reuses its slot. */
	t_agent_start(&a);
	mpk_domain *x = mpk_domain_create("exit-old", MPK_NONE, 0);
	REQUIRE(x);
	REQUIRE(t_agent(&a, T_AG_SET, x, MPK_RW) == 0);
	REQUIRE(t_agent(&a, T_AG_SET, d, MPK_READ) == 0);
	CHECK(mpk_domain_destroy(x) == 0);
	mpk_domain *y = mpk_domain_create("exit-new", MPK_READ, 0);
	REQUIRE(y);
	unsigned char *yp = mpk_alloc(y, t_page());
	REQUIRE(yp);
	CHECK(t_agent(&a, T_AG_GET, y, 0) == MPK_NONE);
	t_agent_stop(&a);
	CHECK_RIGHTS(y, yp, MPK_READ);
	CHECK_FAULT(t_read_in_child(p), d, p);
	CHECK(mpk_domain_destroy(y) == 0);

	/* and the bookkeeping is right afterwards: main alone decides */
	CHECK(mpk_get(d) == MPK_NONE);
	REQUIRE(mpk_set(d, MPK_READ) == 0);
	CHECK_RIGHTS(d, p, MPK_READ);
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	CHECK_RIGHTS(d, p + 6, MPK_NONE);

	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
