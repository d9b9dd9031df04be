/*
 * mpk_rights_save()/restore() at scale: 1,000 domains, the thread holds
 * more than none to 4 of them.  The save keeps what differs from none (a
 * few entries on the heap, not one per domain), and a restore puts back
 * exactly the saved rights: the saved ones reopen (the allowed access
 * succeeds), those opened since close again (the access faults with the
 * domain's si_code/si_pkey), a domain destroyed since is ignored, one
 * created since keeps its rights, an mpk_set_all() made since is overridden
 * for this thread.  hw, 3 keys: opening other domains evicts the saved
 * ones from their keys between save and restore, and again after it.
 */
#include <malloc.h>
#include "t.h"

#define N 1000

static mpk_domain *d[N];
static unsigned char *p[N];
static const int opened_since[] = { 20, 700, 41, 42, 43 };

static int want(int i)
{
	return i == 10 || i == 999 ? MPK_READ : i == 500 || i == 600 ? MPK_RW : MPK_NONE;
}

static void check_all(mpk_domain *late, unsigned char *pl)
{
	int bad = 0;
	for (int i = 0; i < N; i++)
		if (i != 999 && mpk_get(d[i]) != want(i) && bad++ < 5)
			t_fail("domain %d: rights %d, saved %d", i, mpk_get(d[i]), want(i));
	CHECK(mpk_get(late) == MPK_RW);
	/* Allowed accesses succeed... */
	t_touch_read(p[10] + 1);
	p[500][2]++;
	p[600][1]++; /* saved RW and never changed: the restore leaves it be */
	CHECK_NO_FAULT(t_write_in_child(p[500] + 3));
	/* ... forbidden ones fault. */
	CHECK_FAULT(t_write_in_child(p[10] + 4), d[10], p[10] + 4);
	for (size_t k = 0; k < sizeof(opened_since) / sizeof(*opened_since); k++) {
		int i = opened_since[k];
		CHECK_FAULT(t_read_in_child(p[i] + 5), d[i], p[i] + 5);
	}
	pl[0]++; /* created since: still RW */
}

int main(void)
{
	int hw = t_backend() == MPK_BACKEND_HW;
	char name[32];
	mpk_rights_t r;

	if (hw)
		REQUIRE(mpk_set_key_budget(3) == 0);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "sparse-%d", i);
		REQUIRE(d[i] = mpk_domain_create(name, want(i), 0));
	}
	int touched[] = { 10, 500, 600, 999, 20, 700, 41, 42, 43 };
	for (size_t k = 0; k < sizeof(touched) / sizeof(*touched); k++)
		REQUIRE(p[touched[k]] = mpk_alloc(d[touched[k]], 4096));

#ifdef __GLIBC__
	struct mallinfo2 m0 = mallinfo2();
	REQUIRE(mpk_rights_save(&r) == 0);
	struct mallinfo2 m1 = mallinfo2();
	/* A few entries, not 1,000 (24 KiB before): what differs only. */
	CHECK(m1.uordblks - m0.uordblks < 1024);
#else
	REQUIRE(mpk_rights_save(&r) == 0);
	printf("t_rights_save_sparse: the save's heap size not checked (mallinfo2() is glibc's)\n");
#endif

	/* After the save: close one, change one, open others (hw: evicting
	 * the saved ones), set_all one, destroy one, create one. */
	REQUIRE(mpk_set(d[10], MPK_NONE) == 0);
	REQUIRE(mpk_set(d[500], MPK_READ) == 0);
	for (size_t k = 0; k < sizeof(opened_since) / sizeof(*opened_since); k++)
		REQUIRE(mpk_set(d[opened_since[k]], k % 2 ? MPK_READ : MPK_RW) == 0);
	REQUIRE(mpk_set_all(d[300], MPK_RW) == 0);
	REQUIRE(mpk_domain_destroy(d[999]) == 0);
	mpk_domain *late;
	REQUIRE(late = mpk_domain_create("sparse-late", MPK_RW, 0));
	unsigned char *pl;
	REQUIRE(pl = mpk_alloc(late, 4096));
	if (hw) /* the saved keyed ones lost their keys to the opened ones */
		CHECK(mpk_domain_key(d[10]) < 0 || mpk_domain_key(d[500]) < 0);

	REQUIRE(mpk_rights_restore(&r) == 0);
	check_all(late, pl);

	/* Again, after evictions the other way round: the saved ones took
	 * keys back when restored (hw), the opened ones go keyless. */
	for (size_t k = 0; k < sizeof(opened_since) / sizeof(*opened_since); k++)
		REQUIRE(mpk_set(d[opened_since[k]], MPK_RW) == 0);
	REQUIRE(mpk_rights_restore(&r) == 0);
	check_all(late, pl);

	CHECK(mpk_rights_dispose(&r) == 0);
	return t_done();
}
