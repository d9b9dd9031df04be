/* MPK_WITH gives the rights inside its block and restores the previous
 * ones on every way out: falling off the end, break, continue, and return
 * from a function; nested blocks on one domain restore in turn. */
#include "t_state.h"

static mpk_domain *d;
static unsigned char *p;

/* Returns from inside the block; the cleanup must still restore. */
static int read_and_return(void)
{
	MPK_WITH(d, MPK_READ) {
		if (mpk_get(d) != MPK_READ)
			return -1;
		return p[0];
	}
	return -2; /* not reached: the block runs */
}

static int write_and_return_nested(void)
{
	MPK_WITH(d, MPK_READ) {
		MPK_WITH(d, MPK_RW) {
			p[1] = 0x22;
			return mpk_get(d);
		}
	}
	return -2;
}

int main(void)
{
	int ran;

	t_backend();
	d = mpk_domain_create("with", MPK_RW, 0);
	REQUIRE(d);
	p = mpk_alloc(d, t_page());
	REQUIRE(p);
	p[0] = 0x11;
	REQUIRE(mpk_set(d, MPK_NONE) == 0);

	/* Falling off the end; the body runs exactly once. */
	ran = 0;
	MPK_WITH(d, MPK_RW) {
		ran++;
		CHECK(mpk_get(d) == MPK_RW);
		p[2] = 0x33;
	}
	CHECK(ran == 1);
	CHECK_RIGHTS(d, p, MPK_NONE);

	/* break */
	ran = 0;
	MPK_WITH(d, MPK_READ) {
		ran++;
		CHECK(p[0] == 0x11);
		break;
		ran += 100;
	}
	CHECK(ran == 1);
	CHECK_RIGHTS(d, p, MPK_NONE);

	/* continue */
	ran = 0;
	MPK_WITH(d, MPK_READ) {
		ran++;
		continue;
		ran += 100;
	}
	CHECK(ran == 1);
	CHECK_RIGHTS(d, p, MPK_NONE);

	/* break leaves the block, not an enclosing loop */
	ran = 0;
	for (int i = 0; i < 3; i++) {
		MPK_WITH(d, MPK_RW) {
			ran++;
			break;
		}
		CHECK(mpk_get(d) == MPK_NONE);
	}
	CHECK(ran == 3);

	/* return from inside, also from nested blocks */
	CHECK(read_and_return() == 0x11);
	CHECK_RIGHTS(d, p, MPK_NONE);
	CHECK(write_and_return_nested() == MPK_RW);
	CHECK_RIGHTS(d, p, MPK_NONE);

	/* nested on one domain, from a non-NONE starting point */
	REQUIRE(mpk_set(d, MPK_READ) == 0);
	MPK_WITH(d, MPK_RW) {
		MPK_WITH(d, MPK_NONE) {
			CHECK_RIGHTS(d, p, MPK_NONE);
		}
		CHECK_RIGHTS(d, p, MPK_RW);
	}
	CHECK_RIGHTS(d, p, MPK_READ);
	CHECK(p[0] == 0x11 && p[1] == 0x22 && p[2] == 0x33);

	/* A failed enter: the body does not run, rights stay, errno says why. */
	ran = 0;
	errno = 0;
	MPK_WITH(d, 2)
		ran++;
	CHECK(ran == 0 && errno == EINVAL);
	errno = 0;
	MPK_WITH(NULL, MPK_RW)
		ran++;
	CHECK(ran == 0 && errno == EINVAL);
	CHECK_RIGHTS(d, p, MPK_READ);

	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
