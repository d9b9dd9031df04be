/*
 * Attack: the misuse handler, a function pointer and its argument in
 * libmpkit's data.  An attacker who reads the heap layer's objects from
 * the symbol table finds the function a program set with
 * mpk_misuse_handler_set() (its address, a word of the program's code)
 * and writes its own function there; the next misuse the heap
 * detects (here a double free) then calls it: control flow where the
 * attacker chose, or a check silenced.  Sealed, the pair lives with the
 * allocator's sealed globals, read-only: the write faults where it is
 * made.  Both backends, the metadata sealed.
 */
#include "t_attack.h"

static int marker;
static volatile int chosen_calls;

static void program_handler(const struct mpk_misuse *m, void *arg)
{
	(void)m;
	(void)arg;
}

static void attacker_handler(const struct mpk_misuse *m, void *arg)
{
	(void)m;
	(void)arg;
	chosen_calls++;
}

/* The handler, where a heap-layer object holds it. */
static void **find_handler(void)
{
	static struct t_obj o[512];
	int no = t_attack_heap_objects(o, 512);

	for (int i = 0; i < no; i++)
		for (size_t k = 0; k + sizeof(void *) <= o[i].size; k += sizeof(void *)) {
			void **w = (void **)(o[i].at + k);
			if (*w == (void *)program_handler)
				return w;
		}
	return NULL;
}

struct arg {
	mpk_heap *h;
	void **fn;
};

static void hijack(void *p)
{
	const struct arg *a = p;

	*a->fn = (void *)attacker_handler; /* the attacker's write */
	void *b = mpk_heap_malloc(a->h, 32);
	REQUIRE(b);
	CHECK(mpk_heap_free(a->h, b) == 0);
	mpk_heap_free(a->h, b); /* a misuse: the handler runs */
	if (chosen_calls)
		t_fail("a detected double free called the attacker's function");
}

static void attack(void)
{
	t_setenv("MPKIT_HEAP_META", "closed");
	mpk_domain *d = mpk_domain_create("attack-misuse", MPK_RW, 0);
	REQUIRE(d);
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h);
	REQUIRE(mpk_misuse_handler_set(program_handler, &marker) == 0);
	struct arg a = { h, find_handler() };
	if (!a.fn)
		t_fail("no misuse handler found in the heap layer's data");
	REQUIRE(a.fn);

	struct t_child c = t_child(hijack, &a, T_CHILD_FAULT | T_CHILD_CHECKS);
	if (c.fault.faulted && c.fault.where == (void *)a.fn)
		printf("the handler's write faulted: sealed\n");
	else
		t_fail("with the handler at %p rewritten: exit %d (fault at %p)", (void *)a.fn,
		       c.exit_code, c.fault.where);
	t_child_free(&c);

	/* The program's own setter still works, and gives the default back. */
	CHECK(mpk_misuse_handler_set(NULL, NULL) == 0);
	CHECK(find_handler() == NULL);
	CHECK(mpk_heap_destroy(h) == 0 && mpk_domain_destroy(d) == 0);
	t_setenv("MPKIT_HEAP_META", NULL);
}

int main(void)
{
	return t_both_backends(attack);
}
