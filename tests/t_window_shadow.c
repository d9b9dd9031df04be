/*
 * 100,000 regions created and destroyed, every lookup checked against a
 * shadow table: the first, last and a middle byte of each live region name
 * its domain, the guard pages before and after name none, and a destroyed
 * region is nobody's.  Regions are registered over carved, unmapped window
 * units (vm.max_map_count, 65530 by default, allows no 100,000 mappings),
 * so this is the same table as for mapped ones; a share of mapped
 * mpk_alloc() regions are mixed in and checked the same way.
 */
#include "t_window.h"

#define N 100000
#define NDOM 3

static struct {
	unsigned char *p;
	size_t len;
	int dom; /* -1: not live */
	bool mapped;
} sh[N];

static mpk_domain *dom[NDOM];
static unsigned seed = 12345;

static unsigned rnd(void)
{
	seed = seed * 1103515245u + 12345u;
	return seed >> 8;
}

static int bad;

static void expect(const void *a, mpk_domain *want)
{
	errno = 0;
	mpk_domain *got = mpk_domain_of(a);
	if (got != want || (!want && errno != ENOENT)) {
		if (bad++ < 10)
			t_fail("lookup %p: got %p want %p", a, (void *)got, (void *)want);
	}
}

/* dead: also check that destroyed regions are nobody's (not when their
 * units may have been reused since). */
static void check_all(bool dead)
{
	size_t page = t_page();
	for (int i = 0; i < N; i++) {
		mpk_domain *w = sh[i].dom >= 0 ? dom[sh[i].dom] : NULL;
		if (!sh[i].p || (!w && !dead))
			continue;
		expect(sh[i].p, w);
		expect(sh[i].p + sh[i].len - 1, w);
		expect(sh[i].p + sh[i].len / 2, w);
		expect(sh[i].p - 1, NULL);
		expect(sh[i].p + sh[i].len, NULL);
		expect(sh[i].p + sh[i].len + page - 1, NULL);
	}
}

static void create(int i)
{
	size_t page = t_page();
	int k = (int)(rnd() % NDOM);
	sh[i].dom = k;
	sh[i].mapped = i % 50 == 0;
	if (sh[i].mapped) {
		sh[i].len = (1 + rnd() % 3) * page;
		sh[i].p = mpk_alloc(dom[k], sh[i].len);
		REQUIRE(sh[i].p);
	} else {
		/* Some big ones: several granules of the table each. */
		sh[i].len = (i % 997 == 0 ? 600 : 1 + rnd() % 4) * page;
		sh[i].p = mpk__window_carve(sh[i].len, 0);
		REQUIRE(sh[i].p);
		REQUIRE(mpk__region_register(dom[k], sh[i].p, sh[i].len, true) == 0);
	}
}

static void destroy(int i)
{
	if (sh[i].mapped) {
		REQUIRE(mpk_free(dom[sh[i].dom], sh[i].p) == 0);
	} else {
		REQUIRE(mpk__region_register(dom[sh[i].dom], sh[i].p, sh[i].len, false) == 0);
		mpk__window_uncarve(sh[i].p, sh[i].len);
	}
	sh[i].dom = -1; /* p kept: it must now be nobody's */
}

int main(void)
{
	t_backend();
	for (int k = 0; k < NDOM; k++)
		REQUIRE((dom[k] = mpk_domain_create(k == 0 ? "s0" : k == 1 ? "s1" : "s2", MPK_RW, 0)));
	for (int i = 0; i < N; i++)
		create(i);
	check_all(false);
	/* Destroy a random half, check, recreate those, check. */
	for (int i = 0; i < N; i++)
		if (rnd() & 1)
			destroy(i);
	check_all(true);
	for (int i = 0; i < N; i++)
		if (sh[i].dom < 0 && (rnd() & 1))
			create(i);
	check_all(false);
	/* Everything goes; a stale address finds nothing. */
	for (int i = 0; i < N; i++)
		if (sh[i].dom >= 0)
			destroy(i);
	check_all(true);
	/* A wrong unregister is refused. */
	CHECK_ERR(mpk__region_register(dom[0], sh[1].p, sh[1].len, false), EINVAL);
	for (int k = 0; k < NDOM; k++)
		CHECK(mpk_domain_destroy(dom[k]) == 0);
	return t_done();
}
