/*
 * Attack: the thread cache found and planted.  The attacker scans the
 * process's private read-write memory (/proc/self/maps) for a cache entry
 * of the heap (its shape read from the source: the heap, its domain, the
 * key that mangles the entries and the token of cached headers, all in
 * plain memory beside the entries) and pushes an address of their choice:
 * a global with a cached block's header written before it, or a secret
 * another owner holds.  Ordinary heaps, sealed (MPKIT_HEAP_META=closed):
 * there is no cache to find, and malloc hands out only what the slabs in
 * the metadata say is free.  Vaults, open and sealed: the per-thread list
 * is a hint; a listed block is handed out only if its slab (metadata)
 * says it is a slot of the vault, in use for its arena and not the
 * user's, claimed atomically: the global and the live secret are passed
 * over.  With the metadata open an ordinary heap's cache is trusted (a
 * blind attacker is stopped by the mangling; see docs/heaps.md).  Both
 * backends.
 */
#include <stddef.h>

#include "t_attack.h"
#include "../src/heap/heap.h" /* the entry's shape, read from the source */

enum { OFF_TOK = offsetof(struct tcache, tok), OFF_MKEY = offsetof(struct tcache, mkey),
       OFF_DOMAIN = offsetof(struct tcache, domain), OFF_N = offsetof(struct tcache, n),
       OFF_SLOT = offsetof(struct tcache, slot) };

static unsigned char buf[4096] __attribute__((aligned(64)));

/* Push a onto class cls of the cache entry at e. */
static void plant(unsigned char *e, unsigned cls, uintptr_t a)
{
	uint64_t mkey;
	uint8_t n;

	memcpy(&mkey, e + OFF_MKEY, 8);
	n = e[OFF_N + cls];
	if (n >= TC_MAX)
		return;
	uintptr_t v = a ^ mkey;
	memcpy(e + OFF_SLOT + ((size_t)cls * TC_MAX + n) * 8, &v, 8);
	e[OFF_N + cls] = (uint8_t)(n + 1);
}

static void heap_plant(const char *meta)
{
	t_setenv("MPKIT_HEAP_META", meta);
	mpk_domain *d = mpk_domain_create("attack-plant", MPK_RW, 0);
	REQUIRE(d);
	mpk_heap *h = mpk_heap_create(d, 0);
	REQUIRE(h);
	void *p = mpk_heap_malloc(h, 48);
	REQUIRE(p && mpk_heap_free(h, p) == 0);
	unsigned char *e = t_attack_find((uintptr_t)h, OFF_DOMAIN, (uintptr_t)d);
	uintptr_t target = (uintptr_t)buf + 64;
	if (e) {
		uint64_t tok, mark[2] = { 0, 0 };
		memcpy(&tok, e + OFF_TOK, 8);
		mark[0] = (target ^ tok) | (1ull << 63); /* a cached block's header */
		memcpy((void *)(target - 16), mark, 16);
		plant(e, 3, target); /* 48 bytes: the 64-byte class */
	}
	for (int i = 0; i < 4; i++) {
		void *q = mpk_heap_malloc(h, 48);
		REQUIRE(q);
		if ((uintptr_t)q == target || mpk_domain_of(q) != d)
			t_fail("metadata %s: malloc returned %p, outside the heap", meta, q);
	}
	t_attack_sweep(h, NULL, 0);
	CHECK(mpk_heap_destroy(h) == 0 && mpk_domain_destroy(d) == 0);
}

static void vault_plant(const char *meta)
{
	t_setenv("MPKIT_HEAP_META", meta);
	mpk_domain *d = mpk_domain_create("attack-vplant", MPK_RW, 0);
	REQUIRE(d);
	unsigned char *a = mpk_secret_alloc(d, 32), *b = mpk_secret_alloc(d, 32);
	REQUIRE(a && b);
	memset(a, 0xaa, 32);
	CHECK(mpk_secret_free(b) == 0); /* the list's first block */
	unsigned char *e = t_attack_find(0, OFF_DOMAIN, (uintptr_t)d);
	if (!e) {
		t_fail("metadata %s: no vault list found", meta);
	} else {
		plant(e, 1, (uintptr_t)buf + 64); /* 32 bytes: class 1 */
		plant(e, 1, (uintptr_t)a);
	}
	unsigned char *got[4];
	for (int i = 0; i < 4; i++) {
		REQUIRE(got[i] = mpk_secret_alloc(d, 32));
		if (got[i] == buf + 64 || got[i] == a || mpk_domain_of(got[i]) != d)
			t_fail("metadata %s: mpk_secret_alloc returned %p (live secret %p, global %p)",
			       meta, (void *)got[i], (void *)a, (void *)(buf + 64));
		for (int k = 0; k < i; k++)
			if (got[k] == got[i])
				t_fail("metadata %s: secret %p handed out twice", meta, (void *)got[i]);
	}
	for (int k = 0; k < 32; k++)
		if (a[k] != 0xaa) {
			t_fail("metadata %s: the live secret was wiped or reused", meta);
			break;
		}
	for (int i = 0; i < 4; i++)
		CHECK(mpk_secret_free(got[i]) == 0);
	CHECK(mpk_secret_free(a) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
}

static void scenario(void)
{
	t_misuse_catch();
	heap_plant("closed");
	vault_plant("open");
	vault_plant("closed");
	CHECK(t_misuses == 0);
	t_setenv("MPKIT_HEAP_META", NULL);
}

int main(void)
{
	return t_both_backends(scenario);
}
