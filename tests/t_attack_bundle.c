/*
 * Attack: a thread's caches (its bundle, src/heap/cache.c) pointed
 * elsewhere, or filled with a forged entry, where the metadata is sealed.
 * Where a thread's bundle is, is open memory: the thread-local pointer,
 * the pool of bundles exited threads left, and the thread-exit key's
 * value; the bundle itself is too.  The heap calls write a bundle's
 * entries (keys, counts, zeros) with the metadata open, and a thread's
 * exit gives its entries' blocks back.  The attacker reads the area's
 * place from the seal page (readable by all, src/heap/heap.h) and the
 * objects from the symbol table:
 *
 * - the thread's pointer, then the pool's slots, set to the area's first
 *   page (the allocator's state): a vault's free in that thread, which
 *   lists the block in the thread's bundle, wrote its entry over the
 *   state (free lists, bump, key zeroed);
 * - an ordinary heap's entry written into a thread's real bundle (the
 *   heap's handle, its number from calls.c's counter, a live block of
 *   the main thread in every small class): at the thread's exit its
 *   blocks went back to the arena, and the live block was handed out
 *   again.
 *
 * Each in a child, with the metadata sealed; after it the heap and the
 * vault must still work, and no block handed out may overlap the live
 * one.  Both backends.
 */
#include <pthread.h>
#include <stddef.h>

#include "t_attack.h"
#include "../src/heap/heap.h" /* the shapes, read from the source */

/* cache.c's bundle */
struct bundle {
	struct tcache c[TC_HEAPS];
	unsigned next, used;
};

static mpk_heap *h;
static mpk_domain *hd, *vd;
static void *live;
static uint32_t h_uid;

static void *state_page(void)
{
	struct t_obj o;

	REQUIRE(t_attack_heap_symbol("mpk__seal_pg", &o));
	return ((const union mpk__seal_page *)o.at)->s.st;
}

/* A vault secret made and freed: the free lists it in the bundle. */
static void vault_pair(void)
{
	unsigned char *s = mpk_secret_alloc(vd, 32);

	REQUIRE(s);
	CHECK(mpk_secret_free(s) == 0);
}

/* After an attack: the ordinary heap, with the live block kept apart,
 * and the vault still work. */
static void still_sound(void)
{
	struct t_span keep = { live, 48 };

	t_attack_sweep(h, &keep, 1);
	for (int i = 0; i < 64; i++)
		vault_pair();
}

static void *plant_mine(void *arg)
{
	struct t_obj o;

	(void)arg;
	REQUIRE(t_attack_heap_symbol("mine", &o));
	*(void **)o.at = state_page(); /* the attacker's write */
	vault_pair();
	return NULL;
}

static void *plain_thread(void *arg)
{
	(void)arg;
	vault_pair();
	return NULL;
}

/* The entry: every small class lists the live block. */
static void *forge_entry(void *arg)
{
	struct t_obj o;

	(void)arg;
	vault_pair(); /* a real bundle */
	REQUIRE(t_attack_heap_symbol("mine", &o));
	struct bundle *b = *(struct bundle **)o.at;
	REQUIRE(b);
	struct tcache *e = NULL;
	for (int i = 0; i < TC_HEAPS && !e; i++)
		if (!b->c[i].heap)
			e = &b->c[i];
	REQUIRE(e);
	memset(e, 0, offsetof(struct tcache, slot));
	e->heap = (struct heap *)h;
	e->uid = h_uid;
	e->mkey = 1;
	for (unsigned c = 0; c < NCLASSES; c++) {
		e->n[c] = 1;
		e->slot[c][0] = (uintptr_t)live ^ 1;
	}
	b->used |= 1u << (e - b->c);
	return NULL; /* its exit flushes the entries */
}

static void run(void *(*fn)(void *))
{
	pthread_t t;

	REQUIRE(pthread_create(&t, NULL, fn, NULL) == 0);
	REQUIRE(pthread_join(t, NULL) == 0);
}

static void setup(void)
{
	REQUIRE((hd = mpk_domain_create("attack-bundle", MPK_RW, 0)) != NULL);
	REQUIRE((h = mpk_heap_create(hd, 0)) != NULL);
	struct t_obj uids; /* the heaps' counter: h is the last one made (gcc's name, clang's) */
	REQUIRE(t_attack_heap_symbol("uids.0", &uids) || t_attack_heap_symbol("mpk__heap_new.uids", &uids));
	h_uid = *(const uint32_t *)uids.at;
	REQUIRE((vd = mpk_domain_create("attack-bundle-vault", MPK_NONE, 0)) != NULL);
	REQUIRE((live = mpk_heap_malloc(h, 48)) != NULL);
	memset(live, 0x6c, 48);
}

static void check_live(void)
{
	for (int i = 0; i < 48; i++)
		if (((unsigned char *)live)[i] != 0x6c) {
			t_fail("the live block %p was handed out again and written", live);
			return;
		}
}

static void mine_attack(void *arg)
{
	(void)arg;
	setup();
	run(plant_mine);
	still_sound();
	check_live();
}

static void pool_attack(void *arg)
{
	struct t_obj o;

	(void)arg;
	setup();
	run(plain_thread); /* its bundle goes to the pool */
	REQUIRE(t_attack_heap_symbol("pool", &o));
	void *st = state_page();
	for (size_t i = 0; i < o.size / sizeof(void *); i++)
		((void **)o.at)[i] = st; /* the attacker's writes */
	run(plain_thread);
	still_sound();
	check_live();
}

static void entry_attack(void *arg)
{
	(void)arg;
	setup();
	run(forge_entry);
	still_sound();
	check_live();
}

static void in_child(void (*fn)(void *), const char *what)
{
	struct t_child c = t_child(fn, NULL, T_CHILD_CHECKS | T_CHILD_STDERR);

	if (c.exit_code)
		t_fail("%s: the child ended with %d:\n%s", what, c.exit_code, c.err ? c.err : "");
	t_child_free(&c);
}

int main(void)
{
	t_setenv("MPKIT_HEAP_META", "closed");
	in_child(mine_attack, "the thread's bundle pointer into the area");
	in_child(pool_attack, "the pool's bundles into the area");
	in_child(entry_attack, "an ordinary heap's entry forged in a bundle");
	t_setenv("MPKIT_HEAP_META", NULL);
	return t_done();
}
