/*
 * mpk_rights_save()/mpk_rights_restore() round trip on one thread, as a
 * fiber switch: two saved sets alternate, across enter/leave; after each
 * restore the thread's rights are exactly the saved ones (permission: the
 * allowed access succeeds; protection: the forbidden one faults in a child
 * with the domain's si_code/si_pkey at the address touched).  A domain
 * destroyed since the save is ignored (its successor, maybe on the same key
 * or slot, is left as it is).  hw: a key mpkit does not own keeps its bits.
 */
#include "t.h"

static uint32_t pkru(void)
{
	struct mpk_info i;
	REQUIRE(mpk_info(&i) == 0);
	return i.pkru;
}

static void wrpkru(uint32_t v)
{
	__asm__ volatile(".byte 0x0f,0x01,0xef" : : "a"(v), "c"(0), "d"(0) : "memory");
}

static void expect(mpk_domain *d, unsigned char *p, int rights)
{
	CHECK(mpk_get(d) == rights);
	if (rights == MPK_RW) {
		p[100]++;
		CHECK_NO_FAULT(t_write_in_child(p + 100));
	} else if (rights == MPK_READ) {
		t_touch_read(p + 100);
		CHECK_FAULT(t_write_in_child(p + 200), d, p + 200);
	} else {
		CHECK_FAULT(t_read_in_child(p + 300), d, p + 300);
	}
}

int main(void)
{
	int hw = t_backend() == MPK_BACKEND_HW;
	mpk_domain *a, *b, *c;
	unsigned char *pa, *pb;
	mpk_rights_t f1, f2;

	REQUIRE(a = mpk_domain_create("fiber-a", MPK_RW, 0));
	REQUIRE(b = mpk_domain_create("fiber-b", MPK_NONE, 0));
	REQUIRE(c = mpk_domain_create("fiber-c", MPK_READ, 0));
	REQUIRE(pa = mpk_alloc(a, 4096));
	REQUIRE(pb = mpk_alloc(b, 4096));

	REQUIRE(mpk_rights_save(&f1) == 0); /* a RW, b NONE, c READ */
	REQUIRE(mpk_set(a, MPK_READ) == 0);
	REQUIRE(mpk_set(b, MPK_RW) == 0);
	REQUIRE(mpk_set(c, MPK_NONE) == 0);
	REQUIRE(mpk_rights_save(&f2) == 0); /* a READ, b RW, c NONE */

	for (int round = 0; round < 20; round++) {
		REQUIRE(mpk_rights_restore(&f1) == 0);
		CHECK(mpk_get(c) == MPK_READ);
		if (round % 5 == 0) {
			expect(a, pa, MPK_RW);
			expect(b, pb, MPK_NONE);
		}
		/* A scope opened in fiber 1 ... */
		mpk_scope s = mpk_enter(b, MPK_READ);
		REQUIRE(s.saved == MPK_NONE);
		REQUIRE(mpk_rights_restore(&f2) == 0); /* switch to fiber 2 */
		CHECK(mpk_get(a) == MPK_READ && mpk_get(b) == MPK_RW && mpk_get(c) == MPK_NONE);
		if (round % 5 == 0) {
			expect(a, pa, MPK_READ);
			expect(b, pb, MPK_RW);
		}
		mpk_rights_t in2;
		REQUIRE(mpk_rights_save(&in2) == 0);
		REQUIRE(mpk_rights_restore(&f1) == 0); /* back to fiber 1 */
		REQUIRE(mpk_set(b, MPK_READ) == 0);    /* as inside the scope */
		CHECK(mpk_leave(&s) == 0);             /* ... closed there */
		CHECK(mpk_get(b) == MPK_NONE);
		REQUIRE(mpk_rights_restore(&in2) == 0);
		CHECK(mpk_get(a) == MPK_READ && mpk_get(b) == MPK_RW);
		CHECK(mpk_rights_dispose(&in2) == 0);
	}

	/* Destroyed since the save: ignored, the successor keeps its rights. */
	REQUIRE(mpk_rights_restore(&f1) == 0);
	REQUIRE(mpk_domain_destroy(c) == 0);
	mpk_domain *c2;
	REQUIRE(c2 = mpk_domain_create("fiber-c2", MPK_NONE, 0));
	REQUIRE(mpk_rights_restore(&f1) == 0);
	CHECK(mpk_get(c2) == MPK_NONE);
	REQUIRE(mpk_set(c2, MPK_RW) == 0);
	REQUIRE(mpk_rights_restore(&f2) == 0);
	CHECK(mpk_get(c2) == MPK_RW);
	CHECK(mpk_get(a) == MPK_READ && mpk_get(b) == MPK_RW);

	if (hw) {
		/* A key of the application, and key 0: never touched. */
		int app = (int)syscall(SYS_pkey_alloc, 0, 0);
		if (app > 0) {
			uint32_t ad = 1u << (2 * app);
			wrpkru(pkru() & ~(3u << (2 * app))); /* app key open */
			mpk_rights_t s1;
			REQUIRE(mpk_rights_save(&s1) == 0);
			wrpkru(pkru() | ad);                 /* app closes it */
			REQUIRE(mpk_rights_restore(&s1) == 0);
			CHECK(pkru() & ad);                  /* still closed */
			CHECK((pkru() & 3u) == 0);           /* key 0 open */
			wrpkru(pkru() & ~(3u << (2 * app)));
			REQUIRE(mpk_rights_restore(&f1) == 0);
			CHECK(!(pkru() & (3u << (2 * app))));
			mpk_rights_dispose(&s1);
		}
	}
	CHECK(mpk_rights_dispose(&f1) == 0);
	CHECK(mpk_rights_dispose(&f2) == 0);
	CHECK_ERR(mpk_rights_restore(&f1), EINVAL); /* disposed */
	return t_done();
}
