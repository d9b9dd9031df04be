/*
 * Heap metadata is closed between allocator calls: reading or writing it
 * (the heap handle points at it) faults, on hw with SEGV_PKUERR and the key
 * of the one "heap-meta" domain, on soft (MPKIT_HEAP_META=closed) with
 * SEGV_ACCERR, and the fault report names "heap-meta".  Calls still work
 * and leave it closed.  Where it is open (the soft default, or
 * MPKIT_HEAP_META=open) the heap says so and it is plain memory, in no
 * domain.
 */
#include "t_heap.h"

static mpk_heap *h;

static void stray_read(void *arg)
{
	(void)arg;
	REQUIRE(mpk_fault_handler_install(NULL, NULL) == 0);
	t_touch_read(h);
	_exit(0);
}

static void closed(void)
{
	static char report[16384];
	struct mpk_heap_stats st;

	mpk_domain *d = mpk_domain_create("heap-meta-test", MPK_RW, 0);
	REQUIRE(d);
	REQUIRE(h = mpk_heap_create(d, 0));
	mpk_heap *g = mpk_heap_create(d, MPK_HEAP_GUARDED);
	REQUIRE(g);
	REQUIRE(mpk_heap_stats_get(h, &st) == 0);
	CHECK(st.meta_closed == 1);
	mpk_domain *m = mpk_domain_of(h);
	REQUIRE(m);
	CHECK(!strcmp(mpk_domain_name(m), "heap-meta"));
	CHECK(mpk_domain_of(g) == m); /* one arena for all heaps */
	CHECK(mpk_get(m) == MPK_NONE);

	for (int round = 0; round < 3; round++) {
		void *p = mpk_heap_malloc(h, 100 << round);
		void *q = mpk_heap_malloc(g, 100);
		CHECK(p && q);
		CHECK(mpk_get(m) == MPK_NONE);
		CHECK_FAULT(t_read_in_child(h), m, h);
		CHECK_FAULT(t_write_in_child(h), m, h);
		CHECK_FAULT(t_read_in_child(g), m, g);
		CHECK(mpk_heap_free(h, p) == 0 && mpk_heap_free(g, q) == 0);
		CHECK_FAULT(t_read_in_child(h), m, h);
	}

	int status = t_child_stderr(stray_read, NULL, report, sizeof(report));
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
	CHECK_HAS(report, "read of domain \"heap-meta\"");

	CHECK(mpk_heap_destroy(h) == 0 && mpk_heap_destroy(g) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
}

static void open_arena(void)
{
	struct mpk_heap_stats st;

	mpk_domain *d = mpk_domain_create("heap-meta-open", MPK_RW, 0);
	REQUIRE(d);
	REQUIRE(h = mpk_heap_create(d, 0));
	REQUIRE(mpk_heap_stats_get(h, &st) == 0);
	CHECK(st.meta_closed == 0);
	errno = 0;
	CHECK(mpk_domain_of(h) == NULL && errno == ENOENT);
	CHECK_NO_FAULT(t_read_in_child(h));
	void *p = mpk_heap_malloc(h, 10);
	CHECK(p && mpk_heap_free(h, p) == 0);
	CHECK(mpk_heap_destroy(h) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
}

struct env {
	const char *backend, *meta;
	void (*f)(void);
};

static void variant_main(void *arg)
{
	const struct env *e = arg;
	setenv("MPKIT_BACKEND", e->backend, 1);
	t_setenv("MPKIT_HEAP_META", e->meta);
	e->f();
}

/* Run f in a child with this environment, before any mpkit call. */
static void variant(const char *backend, const char *meta, void (*f)(void))
{
	struct env e = { backend, meta, f };
	struct t_child c = t_child(variant_main, &e, T_CHILD_CHECKS | T_CHILD_EXIT);

	if (c.exit_code)
		t_fail("%s, MPKIT_HEAP_META=%s: status 0x%x", backend, t_show(meta), c.status);
}

int main(void)
{
	variant("soft", "closed", closed);
	variant("soft", NULL, open_arena);
	variant("soft", "auto", open_arena);
	if (t_backend() == MPK_BACKEND_HW) {
		variant("hw", "open", open_arena);
		closed(); /* the default on hw */
	}
	return t_done();
}
