/*
 * Attack: the vault's hint of the secret a thread last opened or closed
 * (src/heap/vault.c, t_last: the secret, its live bit, its domain), which
 * lets the next open or close of it skip the address map, is
 * thread-local memory.  The attacker finds it through the symbol table
 * and rewrites its domain to another one, a store the thread holds no
 * rights to; the program then opens its secret again: that call opened
 * the store (read-only, read-write) instead, and the secret stayed
 * closed.  The store must keep no rights and the secret must open.
 * Sealed metadata (no hint is kept then: every call finds the secret
 * through the sealed address map); both backends.
 */
#include <stddef.h>

#include "t_attack.h"

/* vault.c's entry: the secret, its live word and mask, the epoch, the
 * domain; field i of it (clang keeps each field as an object of its own,
 * "t_last.<i>") */
enum { H_P, H_LIVE, H_MASK, H_EPOCH, H_D };

static uintptr_t *field(int i)
{
	struct t_obj o;
	char name[16];

	if (t_attack_heap_symbol("t_last", &o))
		return (uintptr_t *)o.at + i;
	snprintf(name, sizeof(name), "t_last.%d", i);
	REQUIRE(t_attack_heap_symbol(name, &o));
	return (uintptr_t *)o.at;
}

int main(void)
{
	mpk_domain *vault, *store;

	t_setenv("MPKIT_HEAP_META", "closed");
	REQUIRE((vault = mpk_domain_create("attack-hint-vault", MPK_NONE, 0)) != NULL);
	REQUIRE((store = mpk_domain_create("attack-hint-store", MPK_NONE, 0)) != NULL);
	unsigned char *k = mpk_secret_alloc(vault, 32);
	REQUIRE(k);
	CHECK(mpk_secret_readwrite(k) == 0);
	memset(k, 0x4b, 32);
	CHECK(mpk_secret_noaccess(k) == 0); /* a hint would name k's domain now */

	/* The entry as the secret's last open made it, the domain the
	 * store's (were it kept, it would be k's, with k's live bit). */
	uint64_t one = 1;
	if (*field(H_P) != (uintptr_t)k) {
		struct t_obj ep;
		REQUIRE(t_attack_heap_symbol("mpk__runs_epoch", &ep));
		*field(H_LIVE) = (uintptr_t)&one;
		*field(H_MASK) = 1;
		*field(H_EPOCH) = *(const uint64_t *)ep.at;
		*field(H_P) = (uintptr_t)k;
	}
	*field(H_D) = (uintptr_t)store; /* the attacker's write */

	CHECK(mpk_secret_readonly(k) == 0);
	CHECK(mpk_get(store) == MPK_NONE);
	if (mpk_get(store) != MPK_NONE)
		t_fail("opening the secret opened the store the hint was rewritten to");
	CHECK(mpk_get(vault) == MPK_READ);
	CHECK(k[31] == 0x4b);
	*field(H_P) = (uintptr_t)k;
	*field(H_D) = (uintptr_t)store;
	CHECK(mpk_secret_readwrite(k) == 0);
	CHECK(mpk_get(store) == MPK_NONE);
	CHECK(mpk_get(vault) == MPK_RW);
	CHECK(mpk_secret_noaccess(k) == 0);
	CHECK(mpk_secret_free(k) == 0);
	t_setenv("MPKIT_HEAP_META", NULL);
	return t_done();
}
