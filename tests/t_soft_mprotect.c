/* Soft backend: calls that do not change the union of the threads' rights
 * make no system call, and a change of the union costs exactly one
 * mprotect() per region of the domain. */
#include "t_state.h"
#include "t_agent.h"

static unsigned long long last;

/* mprotect() calls since the previous mark. */
static unsigned long long delta(void)
{
	unsigned long long now = t_mprotects(), d = now - last;
	last = now;
	return d;
}

#define CHECK_DELTA(n)                                                       \
	do {                                                                 \
		unsigned long long d_ = delta();                             \
		if (d_ != (unsigned long long)(n))                           \
			t_fail("%llu mprotect() calls, want %d", d_, (int)(n)); \
	} while (0)

int main(void)
{
	size_t page = t_page();
	struct t_agent a;

	t_force_soft();
	mpk_domain *d = mpk_domain_create("count", MPK_NONE, 0);
	REQUIRE(d);
	/* Four regions: three allocated, one adopted. */
	unsigned char *r[3];
	for (int i = 0; i < 3; i++)
		REQUIRE((r[i] = mpk_alloc(d, (size_t)(i + 1) * page)));
	unsigned char *m = t_map_anon(2);
	REQUIRE(mpk_adopt(d, m, 2 * page) == 0);
	int n = 4;
	t_agent_start(&a);
	delta();

	/* The same rights again: nothing to do. */
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	CHECK_DELTA(0);
	CHECK(mpk_get(d) == MPK_NONE);
	CHECK_DELTA(0);

	/* NONE -> RW: the union changes, once per region. */
	REQUIRE(mpk_set(d, MPK_RW) == 0);
	CHECK_DELTA(n);
	REQUIRE(mpk_set(d, MPK_RW) == 0);
	CHECK_DELTA(0);

	/* Main holds RW; another thread's READ scope changes no union. */
	CHECK(t_agent(&a, T_AG_ENTER, d, MPK_READ) == MPK_NONE);
	CHECK_DELTA(0);
	CHECK(t_agent(&a, T_AG_LEAVE, d, 0) == 0);
	CHECK_DELTA(0);
	/* ... nor does it taking RW, nor main's NONE scope while it does. */
	REQUIRE(t_agent(&a, T_AG_SET, d, MPK_RW) == 0);
	CHECK_DELTA(0);
	mpk_scope s = mpk_enter(d, MPK_NONE);
	CHECK(s.saved == MPK_RW);
	CHECK_DELTA(0);
	CHECK(mpk_leave(&s) == 0);
	CHECK_DELTA(0);
	REQUIRE(t_agent(&a, T_AG_SET, d, MPK_NONE) == 0);
	CHECK_DELTA(0);

	/* RW -> READ changes the union. */
	REQUIRE(mpk_set(d, MPK_READ) == 0);
	CHECK_DELTA(n);
	/* READ scopes on READ: nothing. */
	s = mpk_enter(d, MPK_READ);
	CHECK_DELTA(0);
	CHECK(mpk_leave(&s) == 0);
	CHECK_DELTA(0);
	MPK_WITH(d, MPK_READ) {
		CHECK(mpk_get(d) == MPK_READ);
	}
	CHECK_DELTA(0);
	/* an RW scope: there and back */
	MPK_WITH(d, MPK_RW) {
		CHECK_DELTA(n);
	}
	CHECK_DELTA(n);
	/* a failed call: nothing */
	CHECK(mpk_set(d, 2) == -1);
	s = mpk_enter(d, -1);
	CHECK(mpk_leave(&s) == 0);
	CHECK_DELTA(0);

	/* Fewer regions, fewer calls. */
	REQUIRE(mpk_free(d, r[1]) == 0);
	CHECK_DELTA(0);
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	CHECK_DELTA(n - 1);
	/* A new region in a closed domain is closed with one call. */
	REQUIRE(mpk_alloc(d, page));
	CHECK_DELTA(1);
	REQUIRE(mpk_set(d, MPK_RW) == 0);
	CHECK_DELTA(n);

	/* The rights are real after all this. */
	CHECK_RIGHTS(d, r[2] + page, MPK_RW);
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	CHECK_RIGHTS(d, m + page, MPK_NONE);

	t_agent_stop(&a);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
