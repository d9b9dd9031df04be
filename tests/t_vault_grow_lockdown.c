/* SPDX-License-Identifier: MIT */
/*
 * Vault chunks keep growing after mpk_lockdown(), whose filter (kill
 * mode) denies MADV_DODUMP, the flag that keeps a chunk's unused tail
 * apart: a chunk made before the lockdown grows over secrets taken after
 * it; a vault made after it is all live from the start; a child forked
 * after it (the filter is inherited) renews its secret memory in its fork
 * handler and uses the vault, without SIGSYS.  Every secret is zero when
 * opened, and a closed one faults.  Both backends.
 */
#include <string.h>

#include "t_heap.h"
#include "t_pit.h"

enum { N = 120, SIZE = 4096 };

static mpk_domain *d, *late;
static unsigned char *s[N];

static bool all_zero(unsigned char **v, int n)
{
	bool z = true;

	for (int i = 0; i < n; i++)
		for (int j = 0; j < SIZE; j += 1024)
			z &= v[i][j] == 0;
	return z;
}

/* In the forked child: the parent's secrets are zero here, and the
 * vault takes more. */
static void child(void *arg)
{
	unsigned char *more[8];

	(void)arg;
	REQUIRE(mpk_set(d, MPK_READ) == 0);
	CHECK(all_zero(s, N));
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	for (int i = 0; i < 8; i++)
		REQUIRE(more[i] = mpk_secret_alloc(d, 8 * SIZE));
	REQUIRE(mpk_set(d, MPK_RW) == 0);
	CHECK(all_zero(more, 8));
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
}

int main(void)
{
	const char *why = t_lockdown_absent(0);
	if (why)
		t_skip(why);
	t_need_memlock(8 << 20);
	REQUIRE(d = mpk_domain_create("grow-locked", MPK_NONE, 0));
	REQUIRE(late = mpk_domain_create("grow-late", MPK_NONE, 0));
	REQUIRE(s[0] = mpk_secret_alloc(d, SIZE));
	t_segv_recorder_install(); /* for t_read_in_child() after the lockdown */
	REQUIRE(mpk_lockdown(0) == 0);

	/* The chunk made before grows; a vault made after is all live. */
	for (int i = 1; i < N; i++)
		REQUIRE(s[i] = mpk_secret_alloc(d, SIZE));
	unsigned char *l = mpk_secret_alloc(late, 64 << 10);
	REQUIRE(l);
	REQUIRE(mpk_set(d, MPK_READ) == 0);
	CHECK(all_zero(s, N));
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	CHECK_FAULT(t_read_in_child(s[N - 1] + SIZE - 1), d, s[N - 1] + SIZE - 1);
	CHECK_FAULT(t_read_in_child(l), late, l);

	struct t_child c = t_child(child, NULL, T_CHILD_CHECKS);
	if (c.exit_code != 0)
		t_fail("the child forked after the lockdown: exit %d%s", c.exit_code,
		       c.signal == SIGSYS ? " (SIGSYS: the filter)" : "");

	for (int i = 0; i < N; i++)
		CHECK(mpk_secret_free(s[i]) == 0);
	CHECK(mpk_secret_free(l) == 0);
	t_exit_locked();
}
