/* Asking mpkit (mpk_init, mpk_info) gives no thread rights to a domain
 * created later: a thread that started after mpkit initialised, and one
 * that called mpk_info(), both hold MPK_NONE to a domain another thread
 * creates, and on hw touching its memory faults for them. */
#include "t_state.h"
#include "t_agent.h"

static unsigned char *mem;
static struct t_fault seen;

static int call_info(void *arg)
{
	struct mpk_info i;
	(void)arg;
	return mpk_info(&i);
}

static int read_it(void *arg)
{
	(void)arg;
	seen = t_read_in_child(mem);
	return 0;
}

int main(void)
{
	struct t_agent a, b;

	t_backend(); /* initialises */
	t_agent_start(&a);
	t_agent_start(&b);
	REQUIRE(t_agent_run(&b, call_info, NULL) == 0);
	struct mpk_info i;
	REQUIRE(mpk_info(&i) == 0); /* main asks too */

	mpk_domain *d = mpk_domain_create("later", MPK_RW, 0);
	REQUIRE(d);
	mem = mpk_alloc(d, 1);
	REQUIRE(mem);
	mem[0] = 1;

	CHECK(mpk_get(d) == MPK_RW);
	CHECK(t_agent(&a, T_AG_GET, d, 0) == MPK_NONE);
	CHECK(t_agent(&b, T_AG_GET, d, 0) == MPK_NONE);
	/* On soft, main's RW opens the pages for all: only hw can show it. */
	if (mpk_domain_key(d) >= 0) {
		t_agent_run(&a, read_it, NULL);
		CHECK_FAULT(seen, d, mem);
		t_agent_run(&b, read_it, NULL);
		CHECK_FAULT(seen, d, mem);
	}

	t_agent_stop(&a);
	t_agent_stop(&b);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
