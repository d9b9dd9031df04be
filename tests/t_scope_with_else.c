/* SPDX-License-Identifier: MIT */
/*
 * MPK_WITH_ELSE runs its body with the rights when mpk_enter() succeeds
 * and its else branch (errno set, rights unchanged) when it fails, where
 * MPK_WITH would skip its body without a word; break and return leave it
 * with the rights restored.
 */
#include "t_state.h"

static mpk_domain *d;
static unsigned char *p;

static int returns_inside(void)
{
	MPK_WITH_ELSE(d, MPK_RW) {
		p[0] = 7;
		return mpk_get(d);
	} else {
		return -1;
	}
	return -2;
}

int main(void)
{
	int body, other;

	t_backend();
	d = mpk_domain_create("with-else", MPK_NONE, 0);
	REQUIRE(d);
	p = mpk_alloc(d, t_page());
	REQUIRE(p);

	/* success: the body, with the rights; no else */
	body = other = 0;
	MPK_WITH_ELSE(d, MPK_READ) {
		body = mpk_get(d) == MPK_READ && p[0] == 0;
	} else {
		other = 1;
	}
	CHECK(body == 1 && other == 0);
	CHECK(mpk_get(d) == MPK_NONE);

	/* failure (bad rights, bad domain): the else, errno EINVAL */
	const int bad_rights[] = { 2, -1, 100 };
	for (size_t i = 0; i < sizeof(bad_rights) / sizeof(*bad_rights); i++) {
		body = other = 0;
		errno = 0;
		MPK_WITH_ELSE(d, bad_rights[i]) {
			body = 1;
		} else {
			other = errno == EINVAL;
		}
		CHECK(body == 0 && other == 1);
		CHECK(mpk_get(d) == MPK_NONE);
	}
	body = other = 0;
	MPK_WITH_ELSE(NULL, MPK_RW) {
		body = 1;
	} else {
		other = errno == EINVAL;
	}
	CHECK(body == 0 && other == 1);

	/* break leaves the scope, not an enclosing loop, and restores */
	int rounds = 0;
	for (int i = 0; i < 3; i++) {
		MPK_WITH_ELSE(d, MPK_RW) {
			p[1] = (unsigned char)i;
			break;
		} else {
			t_fail("enter failed");
		}
		rounds++;
		CHECK(mpk_get(d) == MPK_NONE);
	}
	CHECK(rounds == 3);

	CHECK(returns_inside() == MPK_RW);
	CHECK(mpk_get(d) == MPK_NONE);
	MPK_WITH(d, MPK_READ)
		CHECK(p[0] == 7 && p[1] == 2);

	/* a statement body without braces, and no else at all */
	MPK_WITH_ELSE(d, MPK_READ)
		body = p[0];
	CHECK(body == 7 && mpk_get(d) == MPK_NONE);

	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
