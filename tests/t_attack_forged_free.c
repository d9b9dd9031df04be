/*
 * Attack: freeing a forged block (how2heap's house_of_spirit): a fake
 * chunk built in memory the attacker controls (a global, the stack, the
 * inside of a block of its own), freed so that a later malloc hands it
 * out.  Here each fake carries a header copied from a real live block of
 * the same size.  mpkit: a pointer in no chunk of the heap, or with a
 * header whose keyed check (over its address) fails, is a wild pointer:
 * the report names it, the call and a backtrace, then abort.  With a
 * handler that returns, the free fails, and no block allocated afterwards
 * is a fake.
 */
#include "t_attack.h"

static mpk_heap *h;
static unsigned char fake_global[256] __attribute__((aligned(64)));

static void free_it(void *p)
{
	mpk_heap_free(h, p);
}

/* A fake of a 48-byte block at p: the real one's header, then data. */
static void forge(unsigned char *p, const unsigned char *real)
{
	t_attack_copy(p - 16, real - 16, 16);
	memset(p, 0x41, 48);
}

int main(void)
{
	unsigned char fake_stack[256] __attribute__((aligned(64)));
	struct t_span keep[4];

	t_backend();
	mpk_domain *d = mpk_domain_create("attack-forged", MPK_RW, 0);
	REQUIRE(d && (h = mpk_heap_create(d, 0)));
	unsigned char *real = mpk_heap_malloc(h, 48), *big = mpk_heap_malloc(h, 300000);
	unsigned char *run = mpk_heap_malloc(h, 20000);
	REQUIRE(real && big && run);

	unsigned char *fakes[] = { fake_global + 64, fake_stack + 64, big + 4096 + 16, run + 4096 };
	for (int i = 0; i < 4; i++) {
		forge(fakes[i], real);
		t_attack_reported(free_it, fakes[i], "wild pointer", fakes[i], "mpk_heap_free");
	}
	t_misuse_catch();
	for (int i = 0; i < 4; i++) {
		CHECK_ERR(mpk_heap_free(h, fakes[i]), EINVAL);
		CHECK_MISUSE(MPK_MISUSE_WILD, fakes[i]);
	}
	keep[0] = (struct t_span){ fake_global, sizeof(fake_global) };
	keep[1] = (struct t_span){ fake_stack, sizeof(fake_stack) };
	keep[2] = (struct t_span){ big, 300000 };
	keep[3] = (struct t_span){ run, 20000 };
	t_attack_sweep(h, keep, 4);
	CHECK(t_misuses == 0);
	/* the real blocks are whole */
	CHECK(mpk_heap_free(h, real) == 0);
	for (int i = 2; i < 4; i++)
		CHECK(mpk_heap_free(h, (void *)keep[i].p) == 0);
	CHECK(mpk_heap_destroy(h) == 0 && mpk_domain_destroy(d) == 0);
	return t_done();
}
