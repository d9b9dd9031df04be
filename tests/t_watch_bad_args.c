/*
 * Argument checks of mpk_watch()/mpk_unwatch(), state unchanged on
 * failure (both backends): NULL address, length 0 or wrapping, flags 0, unknown or
 * MPK_WATCH_VALUES alone, no callback, domain memory, a read-only page (EINVAL); an
 * unmapped page (ENOMEM); more than 64 watches (ENOSPC); a page of this
 * thread's TLS (EBUSY: libc writes it with signals blocked).  After each
 * failure the memory is as it was (rw-p, key 0, writes unreported).
 * mpk_unwatch() of -1, 64, a free id and a stopped one: EINVAL.
 */
#include "t_code.h"

static int hits;
static __thread uint64_t tls_word;
static void on_hit(const struct mpk_watch_hit *h, void *arg)
{
	(void)h;
	(void)arg;
	hits++;
}

static void unchanged(uint8_t *p)
{
	char perms[5];
	t_perms(p, perms);
	CHECK(!strcmp(perms, "rw-p"));
	if (mpk_backend() == MPK_BACKEND_HW)
		CHECK(t_vma_pkey(p) == 0);
	p[1] = 5;
	__asm__ volatile("" ::: "memory");
	CHECK(p[1] == 5 && hits == 0);
}

static void scenario(void)
{
	uint8_t *p = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(p != MAP_FAILED);
	mpk_domain *d = mpk_domain_create("data", MPK_RW, 0);
	REQUIRE(d);
	uint8_t *m = mpk_alloc(d, 4096);
	REQUIRE(m);

	CHECK_ERR(mpk_watch(NULL, 8, MPK_WATCH_WRITE, on_hit, NULL), EINVAL);
	CHECK_ERR(mpk_watch(p, 0, MPK_WATCH_WRITE, on_hit, NULL), EINVAL);
	CHECK_ERR(mpk_watch(p, SIZE_MAX, MPK_WATCH_WRITE, on_hit, NULL), EINVAL);
	CHECK_ERR(mpk_watch(p, 8, 0, on_hit, NULL), EINVAL);
	CHECK_ERR(mpk_watch(p, 8, MPK_WATCH_VALUES, on_hit, NULL), EINVAL);
	CHECK_ERR(mpk_watch(p, 8, MPK_WATCH_WRITE | 8, on_hit, NULL), EINVAL);
	CHECK_ERR(mpk_watch(p, 8, MPK_WATCH_WRITE, NULL, NULL), EINVAL);
	CHECK_ERR(mpk_watch(m, 8, MPK_WATCH_WRITE, on_hit, NULL), EINVAL);
	if (mpk_backend() == MPK_BACKEND_HW)
		CHECK(t_vma_pkey(m) == mpk_domain_key(d));
	REQUIRE(mprotect(p + 4096, 4096, PROT_READ) == 0);
	CHECK_ERR(mpk_watch(p + 4000, 200, MPK_WATCH_WRITE, on_hit, NULL), EINVAL);
	REQUIRE(munmap(p + 2 * 4096, 4096) == 0);
	CHECK_ERR(mpk_watch(p + 2 * 4096, 8, MPK_WATCH_WRITE, on_hit, NULL), ENOMEM);
	unchanged(p);
	CHECK_ERR(mpk_watch(&tls_word, 8, MPK_WATCH_WRITE, on_hit, NULL), EBUSY);
	CHECK_ERR(mpk_watch(&tls_word, 8, MPK_WATCH_READ, on_hit, NULL), EBUSY);
	char perms[5];
	t_perms(&tls_word, perms);
	CHECK(!strcmp(perms, "rw-p"));
	tls_word = 7;
	__asm__ volatile("" ::: "memory");
	CHECK(tls_word == 7 && hits == 0);

	int ids[64];
	for (int i = 0; i < 64; i++)
		REQUIRE((ids[i] = mpk_watch(p + 64 * i, 8, MPK_WATCH_WRITE, on_hit, NULL)) >= 0);
	CHECK_ERR(mpk_watch(p + 4000, 8, MPK_WATCH_WRITE, on_hit, NULL), ENOSPC);
	for (int i = 0; i < 64; i++)
		CHECK(mpk_unwatch(ids[i]) == 0);
	unchanged(p);

	CHECK_ERR(mpk_unwatch(-1), EINVAL);
	CHECK_ERR(mpk_unwatch(64), EINVAL);
	CHECK_ERR(mpk_unwatch(ids[0]), EINVAL);
	CHECK(mpk_domain_destroy(d) == 0);
}

int main(void)
{
	return t_both_backends(scenario);
}
