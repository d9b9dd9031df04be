/* Soft backend: page protections are process-wide, so a domain's memory is
 * as open as the most any thread holds.  One thread holding RW makes it
 * writable for all (a child forked from a thread holding NONE can write);
 * when that thread drops to READ, writes fault; when nobody holds
 * anything, reads fault.  Each thread's own mpk_get() stays its own. */
#include "t_state.h"
#include "t_agent.h"

/* The page protection now, seen from a thread holding NONE. */
#define CHECK_UNION(d, p, r)                                                 \
	do {                                                                 \
		if ((r) == MPK_NONE)                                         \
			CHECK_FAULT(t_read_in_child(p), d, p);               \
		else                                                         \
			CHECK_NO_FAULT(t_read_in_child(p));                  \
		if ((r) == MPK_RW)                                           \
			CHECK_NO_FAULT(t_write_in_child(p));                 \
		else                                                         \
			CHECK_FAULT(t_write_in_child(p), d, p);              \
	} while (0)

int main(void)
{
	struct t_agent a, b;

	t_force_soft();
	mpk_domain *d = mpk_domain_create("union", MPK_RW, 0);
	REQUIRE(d);
	unsigned char *p = mpk_alloc(d, t_page());
	REQUIRE(p);
	p[0] = 42;
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	CHECK_UNION(d, p, MPK_NONE);

	t_agent_start(&a);
	t_agent_start(&b);
	/* new threads hold nothing */
	CHECK(t_agent(&a, T_AG_GET, d, 0) == MPK_NONE);
	CHECK(t_agent(&b, T_AG_GET, d, 0) == MPK_NONE);

	/* A: RW, B: NONE, main: NONE -> writable for everyone */
	REQUIRE(t_agent(&a, T_AG_SET, d, MPK_RW) == 0);
	CHECK(mpk_get(d) == MPK_NONE);
	CHECK(t_agent(&b, T_AG_GET, d, 0) == MPK_NONE);
	CHECK_UNION(d, p, MPK_RW);
	p[1] = 43; /* main itself, holding NONE, writes */
	CHECK(p[0] == 42 && p[1] == 43);

	/* A drops to READ -> read-only */
	REQUIRE(t_agent(&a, T_AG_SET, d, MPK_READ) == 0);
	CHECK_UNION(d, p, MPK_READ);
	CHECK(p[1] == 43);

	/* B takes RW -> writable again; B drops -> back to A's READ */
	REQUIRE(t_agent(&b, T_AG_SET, d, MPK_RW) == 0);
	CHECK_UNION(d, p, MPK_RW);
	REQUIRE(t_agent(&b, T_AG_SET, d, MPK_NONE) == 0);
	CHECK_UNION(d, p, MPK_READ);

	/* main's own rights count like any thread's */
	REQUIRE(mpk_set(d, MPK_RW) == 0);
	CHECK_UNION(d, p, MPK_RW);
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	CHECK_UNION(d, p, MPK_READ);

	/* A drops too -> closed */
	REQUIRE(t_agent(&a, T_AG_SET, d, MPK_NONE) == 0);
	CHECK_UNION(d, p, MPK_NONE);
	CHECK(t_agent(&a, T_AG_GET, d, 0) == MPK_NONE);

	/* A scope in another thread opens it for the scope only */
	CHECK(t_agent(&b, T_AG_ENTER, d, MPK_READ) == MPK_NONE);
	CHECK_UNION(d, p, MPK_READ);
	CHECK(t_agent(&b, T_AG_LEAVE, d, 0) == 0);
	CHECK_UNION(d, p, MPK_NONE);

	t_agent_stop(&a);
	t_agent_stop(&b);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
