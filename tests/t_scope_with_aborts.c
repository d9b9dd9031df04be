/* SPDX-License-Identifier: MIT */
/*
 * With MPK_WITH_ABORTS defined, an MPK_WITH whose mpk_enter() fails does
 * not skip its body silently: it prints the file, line and error on stderr
 * and aborts.  One that succeeds runs as always.
 */
#define MPK_WITH_ABORTS 1
#include "t_state.h"

/* In a child: MPK_WITH with rights that do not exist. */
static void bad_rights(void *d)
{
	MPK_WITH((mpk_domain *)d, 5) {
		_exit(10); /* the body must not run */
	}
	_exit(11); /* nor the code after it */
}

int main(void)
{
	t_backend();
	mpk_domain *d = mpk_domain_create("with-aborts", MPK_NONE, 0);
	REQUIRE(d);
	unsigned char *p = mpk_alloc(d, t_page());
	REQUIRE(p);

	int ran = 0;
	MPK_WITH(d, MPK_RW) {
		p[0] = 1;
		ran = 1;
	}
	CHECK(ran && mpk_get(d) == MPK_NONE);

	struct t_child c = t_child(bad_rights, d, T_CHILD_STDERR);
	CHECK(c.signal == SIGABRT);
	CHECK(strstr(c.err, "t_scope_with_aborts.c:") != NULL);
	CHECK(strstr(c.err, "mpk_enter failed: Invalid argument") != NULL);
	t_child_free(&c);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
