/*
 * Attack: the heap allocator's own globals rewritten where they live, in
 * libmpkit's writable data, by an attacker who reads the library's symbol
 * table (here the test's own, which links libmpkit.a) and who may read
 * and write any memory not sealed.  The heap layer's objects are the
 * local ones of its files (src/heap/) and its globals (heap.h); in them
 * the attacker takes every word that names the heap-meta domain's memory
 * (bump pointer and end, free lists, registry, the address map's root,
 * the big-block table: where the next descriptor comes from) or is the
 * heap-meta domain's handle (the seal's switch), and every entry of the
 * chunk tag table.  It points them at a buffer of its own (a bump and end
 * pair at its second half, the rest at zeroed runs with NULL links) and
 * the handle to NULL, as the old layout made possible: malloc then wrote
 * the next heap descriptor into the buffer.
 *
 * Sealed, each such word lies in sealed memory: the write faults where it
 * is made (each is tried alone in a child, which must die of SIGSEGV at
 * that very address, or else survive it).  All the writes that did not
 * fault are then made together, and the allocator must hand out nothing
 * in the buffer nor write it: mpk_heap_create() fails or gives a handle
 * elsewhere, every block of a sweep lies in the heap's domain.  Open (the
 * soft default) nothing is sealed: not tested.  Both backends.
 */
#include "t_attack.h"

enum { BUF = 1 << 20, MAXW = 256 };

static unsigned char buf[BUF] __attribute__((aligned(4096)));
static unsigned char want[BUF];

static bool in_meta(uintptr_t w, mpk_domain *m)
{
	return w && mpk_domain_of((void *)w) == m;
}

/* The words to write and what: a bump and end pair into the buffer's
 * second half, the domain handle NULL, other pointers into the area and
 * tag leaves at zeroed runs of the buffer (links and tags NULL). */
struct wr {
	uintptr_t *at;
	uintptr_t val;
};

static int targets(struct wr *w, mpk_domain *m)
{
	static struct t_obj o[512];
	int no = t_attack_heap_objects(o, 512), n = 0, run = 0;

	for (int i = 0; i < no; i++) {
		uintptr_t *p = (uintptr_t *)((o[i].at + 7) & ~(uintptr_t)7);
		for (; (uintptr_t)(p + 1) <= o[i].at + o[i].size && n < MAXW - 1; p++) {
			if (*p == (uintptr_t)m) {
				w[n++] = (struct wr){ p, 0 };
			} else if (in_meta(p[0], m) && (uintptr_t)(p + 2) <= o[i].at + o[i].size &&
				   p[1] > p[0] && in_meta(p[1] - 1, m) && !in_meta(p[1], m)) {
				/* the bump and its end: the last word of its region */
				w[n++] = (struct wr){ p, (uintptr_t)buf + BUF / 2 };
				w[n++] = (struct wr){ p + 1, (uintptr_t)buf + BUF };
				p++;
			} else if (in_meta(*p, m)) {
				w[n++] = (struct wr){ p, (uintptr_t)buf + ((size_t)(run++ % 8) << 16) };
			}
		}
	}
	/* The tag table's leaves (its root is a global named above): an
	 * attacker sees the mappings its entries name. */
	for (int i = 0; i < no; i++) {
		uintptr_t *p = (uintptr_t *)o[i].at;
		if (o[i].size != (sizeof(void *) << (48 - 20 - 14)))
			continue;
		for (size_t k = 0; k < o[i].size / sizeof(*p) && n < MAXW; k++)
			if (p[k] && !in_meta(p[k], m))
				w[n++] = (struct wr){ &p[k], (uintptr_t)buf + ((size_t)(run++ % 8) << 16) };
	}
	return n;
}

static void write_one(void *arg)
{
	const struct wr *w = arg;

	*(volatile uintptr_t *)w->at = w->val;
}

static int misuses;
static void on_misuse(const struct mpk_misuse *mi, void *arg)
{
	(void)mi;
	(void)arg;
	misuses++;
}

struct all {
	const struct wr *w;
	int n;
	mpk_heap *h;
	mpk_domain *d;
	void *live;
};

/* Every write that did not fault, then the allocator at work: nothing
 * in the buffer, nothing written there. */
static void write_all(void *arg)
{
	const struct all *a = arg;

	REQUIRE(mpk_misuse_handler_set(on_misuse, NULL) == 0);
	memset(buf, 0x5a, sizeof(buf));
	for (int r = 0; r < 8; r++)
		memset(buf + ((size_t)r << 16), 0, 64);
	memcpy(want, buf, sizeof(buf));
	for (int i = 0; i < a->n; i++)
		*(volatile uintptr_t *)a->w[i].at = a->w[i].val;

	mpk_heap *h2 = mpk_heap_create(a->d, 0);
	if (h2 && (unsigned char *)h2 >= buf && (unsigned char *)h2 < buf + BUF)
		t_fail("the new heap's descriptor %p is in the attacker's buffer", (void *)h2);
	void *blk[12];
	for (int i = 0; i < 12; i++) {
		blk[i] = mpk_heap_malloc(a->h, 120 << 10);
		if (blk[i] && mpk_domain_of(blk[i]) != a->d)
			t_fail("block %p outside the heap's domain", blk[i]);
	}
	CHECK(mpk_heap_free(a->h, a->live) == 0);
	if (memcmp(buf, want, sizeof(buf)))
		t_fail("the allocator wrote into the attacker's buffer");
	struct t_span keep = { buf, BUF };
	t_attack_sweep(a->h, &keep, 1);
}

static void attack(void)
{
	static struct wr w[MAXW], left[MAXW];
	t_setenv("MPKIT_HEAP_META", "closed");
	mpk_domain *d = mpk_domain_create("attack-bss", MPK_RW, 0);
	REQUIRE(d);
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h);
	mpk_domain *m = mpk_domain_of(h);
	REQUIRE(m && !strcmp(mpk_domain_name(m), "heap-meta"));
	void *small = mpk_heap_malloc(h, 100), *big = mpk_heap_malloc(h, 300 << 10);
	REQUIRE(small && big); /* a chunk tagged, a big-block table */

	int n = targets(w, m), nleft = 0, sealed = 0;
	if (!n)
		t_fail("no word of the heap layer's data names the heap-meta domain");
	for (int i = 0; i < n; i++) {
		struct t_child c = t_child(write_one, &w[i], T_CHILD_FAULT);
		if (c.fault.faulted && c.fault.where == (void *)w[i].at)
			sealed++;
		else if (c.exit_code == 0)
			left[nleft++] = w[i];
		else
			t_fail("the write at %p: exit %d, fault at %p", (void *)w[i].at, c.exit_code,
			       c.fault.where);
		t_child_free(&c);
	}
	printf("%d words found, %d sealed (the write faulted), %d written\n", n, sealed, nleft);
	struct all a = { left, nleft, h, d, big };
	struct t_child c = t_child(write_all, &a, T_CHILD_CHECKS);
	if (c.exit_code)
		t_fail("with the %d writes that did not fault made: exit %d", nleft, c.exit_code);
	t_child_free(&c);

	CHECK(mpk_heap_free(h, small) == 0 && mpk_heap_free(h, big) == 0);
	t_attack_sweep(h, NULL, 0);
	CHECK(mpk_heap_destroy(h) == 0 && mpk_domain_destroy(d) == 0);
	t_setenv("MPKIT_HEAP_META", NULL);
}

int main(void)
{
	return t_both_backends(attack);
}
