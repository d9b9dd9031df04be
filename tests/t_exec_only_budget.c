/*
 * The kernel's execute-only key and mpkit's key accounting (hw).  With the
 * budget at 15 and mpkit holding every key the kernel has (15 domains),
 * mpk_exec_only() makes the least recently used domain give its key back:
 * the memory is execute-only (SEGV_PKUERR with the kernel's key, not
 * readable), mpkit holds 14 keys, the kernel none are free, the keyed
 * domains still protect, every domain opens (winning keys back, none
 * ever the kernel's).  A domain created afterwards works too, virtual.  When no domain
 * can give its key back (another thread holds other rights to each),
 * mpk_exec_only() fails with ENOSPC and the range is as it was: readable,
 * key 0, never silently "execute-only" but readable.
 */
#include <pthread.h>

#include "t_agent.h"
#include "t_code.h"

#define N 15

static mpk_domain *d[N + 1];
static uint8_t *mem[N + 1];

static uint8_t *code_page(uint32_t v)
{
	uint8_t *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(p != MAP_FAILED);
	t_emit_ret(p, v);
	return p;
}

static void all_keys(void)
{
	struct mpk_info in;
	char name[16];

	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "d%d", i);
		REQUIRE((d[i] = mpk_domain_create(name, MPK_RW, 0)));
		REQUIRE((mem[i] = mpk_alloc(d[i], 4096)));
		mem[i][0] = (uint8_t)i;
	}
	REQUIRE(mpk_info(&in) == 0);
	if (in.keys_in_use != N)
		t_skip("the kernel gave fewer than 15 keys");
	CHECK(in.keys_free == 0);
}

static void gives_back(void)
{
	struct mpk_info in;

	all_keys();
	uint8_t *p = code_page(42);
	REQUIRE(mpk_exec_only(p, 4096) == 0);
	int k = mpk_exec_only_key();
	CHECK(t_vma_pkey(p) == k && k > 0);
	CHECK(((t_fn)p)() == 42);
	struct t_fault f = t_read_in_child(p);
	CHECK(f.faulted && f.code == SEGV_PKUERR && f.pkey == k);
	REQUIRE(mpk_info(&in) == 0);
	CHECK(in.keys_in_use == N - 1);
	CHECK(in.keys_free == 0);
	int keyless = 0;
	for (int i = 0; i < N; i++)
		keyless += mpk_domain_key(d[i]) < 0;
	CHECK(keyless == 1);
	/* Closing takes no key, so none moves here: the keyed ones fault;
	 * the evicted one stays as open as every thread held it (a virtual
	 * domain's base, docs/virtual-domains.md). */
	for (int i = 0; i < N; i++) {
		CHECK(mpk_domain_key(d[i]) != k);
		CHECK(mpk_set(d[i], MPK_NONE) == 0);
		if (mpk_domain_key(d[i]) >= 0)
			CHECK_FAULT(t_read_in_child(mem[i]), d[i], mem[i]);
	}
	/* Opening wins keys back, evicting in turn. */
	for (int i = 0; i < N; i++) {
		CHECK(mpk_set(d[i], MPK_READ) == 0);
		CHECK(mem[i][0] == i);
		CHECK(mpk_domain_key(d[i]) != k);
	}
	REQUIRE((d[N] = mpk_domain_create("late", MPK_RW, 0)));
	REQUIRE((mem[N] = mpk_alloc(d[N], 4096)));
	mem[N][0] = 1;
	CHECK(mpk_set(d[N], MPK_NONE) == 0);
	CHECK_FAULT(t_write_in_child(mem[N]), d[N], mem[N]);
	REQUIRE(mpk_info(&in) == 0);
	CHECK(in.keys_in_use == N - 1);
	/* Still execute-only. */
	f = t_read_in_child(p);
	CHECK(f.faulted && f.code == SEGV_PKUERR && f.pkey == k);
}

static void cannot_give_back(void)
{
	struct t_agent a;

	all_keys();
	/* Another thread holds none where this one holds read-write: no
	 * domain can move without changing someone's rights. */
	t_agent_start(&a);
	for (int i = 0; i < N; i++)
		REQUIRE(t_agent(&a, T_AG_SET, d[i], MPK_NONE) == 0);
	uint8_t *p = code_page(7);
	CHECK_ERR(mpk_exec_only(p, 4096), ENOSPC);
	char perms[5];
	t_perms(p, perms);
	CHECK(!strcmp(perms, "rw-p"));
	CHECK(t_vma_pkey(p) == 0);
	CHECK(p[0] == 0xb8);
	struct mpk_info in;
	REQUIRE(mpk_info(&in) == 0);
	CHECK(in.keys_in_use == N);
	t_agent_stop(&a);
}

int main(void)
{
	t_need_hw();
	t_in_child(gives_back, "give a key back");
	t_in_child(cannot_give_back, "no key to give");
	return t_done();
}
