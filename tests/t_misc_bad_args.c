/* The calls that take no domain reject bad input with EINVAL (EBUSY for a
 * budget below the keys held) and change nothing: mpk_info(NULL),
 * mpk_stats_get(NULL), mpk_set_key_budget(), mpk_backend_name(),
 * mpk_fault_format(), mpk_leave(NULL), mpk_fault_handler_remove() with no
 * handler installed. */
#include <limits.h>

#include "t_state.h"

static void mine(int sig)
{
	(void)sig;
}

int main(void)
{
	struct mpk_info before, after;
	struct mpk_stats st;
	struct sigaction sa, now;

	t_backend();
	REQUIRE(mpk_info(&before) == 0);
	REQUIRE(mpk_stats_get(&st) == 0);

	CHECK_ERR(mpk_info(NULL), EINVAL);
	CHECK_ERR(mpk_stats_get(NULL), EINVAL);

	const int budgets[] = { 0, 16, -1, 100, INT_MIN, INT_MAX };
	for (size_t i = 0; i < sizeof(budgets) / sizeof(*budgets); i++)
		CHECK_ERR_CASE(mpk_set_key_budget(budgets[i]), EINVAL, "budget %d",
			       budgets[i]);
	REQUIRE(mpk_info(&after) == 0);
	CHECK(after.key_budget == before.key_budget);

	/* Below the keys held (hw only: soft holds none). */
	mpk_domain *a = mpk_domain_create("misc-a", MPK_NONE, 0);
	mpk_domain *b = mpk_domain_create("misc-b", MPK_NONE, 0);
	REQUIRE(a && b);
	REQUIRE(mpk_info(&after) == 0);
	if (after.keys_in_use >= 2) {
		CHECK_ERR(mpk_set_key_budget(1), EBUSY);
		CHECK_ERR(mpk_set_key_budget(after.keys_in_use - 1), EBUSY);
		REQUIRE(mpk_info(&after) == 0);
		CHECK(after.key_budget == before.key_budget);
	} else {
		CHECK(mpk_backend() == MPK_BACKEND_SOFT && after.keys_in_use == 0);
	}
	CHECK(mpk_domain_destroy(a) == 0);
	CHECK(mpk_domain_destroy(b) == 0);

	const int backends[] = { 99, 0, -1, 3, INT_MIN };
	for (size_t i = 0; i < sizeof(backends) / sizeof(*backends); i++)
		CHECK_ERR_CASE(mpk_backend_name(backends[i]), EINVAL, "backend %d",
			       backends[i]);

	/* A fault report of nothing writes nothing. */
	char buf[64];
	memset(buf, '#', sizeof(buf));
	CHECK_ERR(mpk_fault_format(NULL, buf, sizeof(buf)), EINVAL);
	CHECK(buf[0] == '#' && buf[sizeof(buf) - 1] == '#');
	struct mpk_fault f = { .domain_name = "x" };
	CHECK_ERR(mpk_fault_format(&f, NULL, 16), EINVAL);

	CHECK_ERR(mpk_leave(NULL), EINVAL);

	/* No mpkit handler: removing is EINVAL and ours stays in place. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = mine;
	REQUIRE(sigaction(SIGSEGV, &sa, NULL) == 0);
	CHECK_ERR(mpk_fault_handler_remove(), EINVAL);
	REQUIRE(sigaction(SIGSEGV, NULL, &now) == 0);
	CHECK(!(now.sa_flags & SA_SIGINFO) && now.sa_handler == mine);
	/* Installed and removed, it is gone again: a second remove fails and
	 * touches nothing. */
	REQUIRE(mpk_fault_handler_install(NULL, NULL) == 0);
	REQUIRE(mpk_fault_handler_remove() == 0);
	CHECK_ERR(mpk_fault_handler_remove(), EINVAL);
	REQUIRE(sigaction(SIGSEGV, NULL, &now) == 0);
	CHECK(!(now.sa_flags & SA_SIGINFO) && now.sa_handler == mine);

	/* None of it counted as work. */
	struct mpk_stats st2;
	REQUIRE(mpk_stats_get(&st2) == 0);
	CHECK(st2.mprotect_calls == st.mprotect_calls);
	CHECK(st2.faults_reported == st.faults_reported);
	REQUIRE(mpk_info(&after) == 0);
	CHECK(after.domains == before.domains);
	CHECK(after.keys_in_use == before.keys_in_use);
	CHECK(after.key_budget == before.key_budget);
	CHECK(after.backend == before.backend);
	return t_done();
}
