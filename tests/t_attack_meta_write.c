/*
 * Attack: a write straight at the heap's metadata (free lists, bitmaps,
 * chunk and run descriptors: what glibc keeps in its arena and in the
 * chunks).  mpkit keeps all of it in one area apart from the blocks, and
 * the heap handle points into it.  On hw the area is closed (the default):
 * a write there faults, SEGV_PKUERR with the key of the "heap-meta"
 * domain, and the fault report names that domain.  On soft it is closed
 * only with MPKIT_HEAP_META=closed (then SEGV_ACCERR, no key); open (the
 * soft default, two mprotect() calls per metadata open saved) it is plain
 * memory apart from the blocks, in no domain, and the write lands.
 */
#include "t_attack.h"

static mpk_heap *h;

/* In a child: the write, with mpkit's fault report. */
static void stray_write(void *p)
{
	REQUIRE(mpk_fault_handler_install(NULL, NULL) == 0);
	t_touch_write(p);
	_exit(0);
}

static void scenario(void)
{
	struct mpk_heap_stats st;
	mpk_domain *d = mpk_domain_create("attack-meta", MPK_RW, 0);

	REQUIRE(d && (h = mpk_heap_create(d, 0)));
	void *p = mpk_heap_malloc(h, 100);
	REQUIRE(p && mpk_heap_stats_get(h, &st) == 0);
	/* the handle, an arena's lock and free-run buckets, a page on */
	unsigned char *at[] = { (unsigned char *)h, (unsigned char *)h + 200, (unsigned char *)h + 4096 };
	int hw = mpk_backend() == MPK_BACKEND_HW;

	if (!st.meta_closed) {
		CHECK(!hw); /* closed by default on hw */
		errno = 0;
		CHECK(mpk_domain_of(h) == NULL && errno == ENOENT);
		for (int i = 0; i < 3; i++)
			CHECK_NO_FAULT(t_write_in_child(at[i]));
	} else {
		mpk_domain *m = mpk_domain_of(h);
		REQUIRE(m);
		CHECK(!strcmp(mpk_domain_name(m), "heap-meta"));
		CHECK(hw ? mpk_domain_key(m) > 0 : mpk_domain_key(m) < 0);
		for (int i = 0; i < 3; i++) {
			struct t_fault f = t_write_in_child(at[i]);
			CHECK_FAULT(f, m, at[i]);
			CHECK(f.code == (hw ? SEGV_PKUERR : SEGV_ACCERR));
		}
		struct t_child c = t_child(stray_write, at[1], T_CHILD_STDERR);
		CHECK(c.signal == SIGABRT);
		CHECK_HAS(c.err, "write of domain \"heap-meta\"");
		t_child_free(&c);
	}
	/* the heap goes on */
	CHECK(mpk_heap_free(h, p) == 0);
	t_attack_sweep(h, NULL, 0);
	CHECK(mpk_heap_destroy(h) == 0 && mpk_domain_destroy(d) == 0);
}

static void soft_closed(void)
{
	t_setenv("MPKIT_HEAP_META", "closed");
	t_force_soft();
	scenario();
}

int main(void)
{
	t_in_child(soft_closed, "soft, MPKIT_HEAP_META=closed");
	return t_both_backends(scenario);
}
