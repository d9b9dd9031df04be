/*
 * A thread remembers the secret it last opened or closed, to skip the
 * address map the next time; what it remembered is never taken for
 * another block.  Both backends:
 *  - a secret freed by its own thread, or by another, no longer opens
 *    (EINVAL, rights untouched); one handed out again at that address
 *    opens as it should;
 *  - a run of 32-byte secrets given back and cut again into 64-byte ones:
 *    an old 32-byte address in the middle of a live 64-byte secret, whose
 *    old live bit now belongs to the 64-byte secret beside it, is refused
 *    by every thread that remembered it, while those that are secrets
 *    again open.  (Without the epoch check six of the eight opened.)
 */
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "t_heap.h"

#define SLABS 8
#define PER_SLAB 128 /* 32-byte blocks in a page */
#define NSMALL (SLABS * PER_SLAB)
#define NBIG 2048

static mpk_domain *d;
static unsigned char *small[NSMALL], *big[NBIG];
static pthread_barrier_t bar;
static int rc_of[SLABS], err_of[SLABS], rights_after[SLABS];
static unsigned char *probe_at[SLABS];

static unsigned char *page_of(const void *p)
{
	return (unsigned char *)((uintptr_t)p & ~(uintptr_t)4095);
}

/* Remembers probe_at[i] (opens and closes it), waits while the blocks
 * move, then opens it again and says what happened. */
static void *probe(void *arg)
{
	int i = (int)(intptr_t)arg;
	unsigned char *p = probe_at[i];

	if (mpk_secret_readonly(p) == 0) {
		volatile unsigned char c = p[0];
		(void)c;
		rc_of[i] = mpk_secret_noaccess(p);
	} else {
		rc_of[i] = -2;
	}
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar);
	errno = 0;
	rc_of[i] = mpk_secret_readonly(p);
	err_of[i] = errno;
	rights_after[i] = mpk_get(d);
	if (rc_of[i] == 0) {
		volatile unsigned char c = p[0]; /* open: readable */
		(void)c;
		(void)!mpk_secret_noaccess(p);
	}
	return NULL;
}

static void *free_it(void *arg)
{
	CHECK(mpk_secret_free(arg) == 0);
	return NULL;
}

static bool is_live(const unsigned char *p, size_t *inside_of)
{
	*inside_of = 0;
	for (int j = 0; j < NBIG; j++) {
		if (big[j] == p)
			return true;
		if (big[j] && p > big[j] && p < big[j] + 64)
			*inside_of = 1;
	}
	return false;
}

static void freed_and_again(void)
{
	unsigned char *s = mpk_secret_alloc(d, 32);
	REQUIRE(s);
	CHECK(mpk_secret_readonly(s) == 0 && s[0] == 0);
	CHECK(mpk_secret_noaccess(s) == 0);
	CHECK(mpk_secret_free(s) == 0);
	CHECK_ERR(mpk_secret_readonly(s), EINVAL);
	CHECK_ERR(mpk_secret_readwrite(s), EINVAL);
	CHECK(mpk_get(d) == MPK_NONE);
	unsigned char *again = mpk_secret_alloc(d, 32);
	REQUIRE(again);
	CHECK(mpk_secret_readwrite(again) == 0);
	again[0] = 7;
	CHECK(mpk_get(d) == MPK_RW);
	CHECK(mpk_secret_noaccess(again) == 0);

	/* Freed by another thread while this one remembers it. */
	CHECK(mpk_secret_readonly(again) == 0 && again[0] == 7);
	CHECK(mpk_secret_noaccess(again) == 0);
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, free_it, again) == 0);
	pthread_join(t, NULL);
	CHECK_ERR(mpk_secret_readonly(again), EINVAL);
	CHECK(mpk_get(d) == MPK_NONE);
}

int main(void)
{
	pthread_t t[SLABS];

	t_backend();
	t_need_memlock(4 << 20);
	REQUIRE(d = mpk_domain_create("vault-reopen", MPK_NONE, 0));
	freed_and_again();

	/* Whole pages of 32-byte secrets; a thread remembers the second
	 * block of each page (bit 1 of its run). */
	int pages = 0;
	for (int j = 0; j < NSMALL; j++)
		REQUIRE(small[j] = mpk_secret_alloc(d, 32));
	for (int j = 0; j < NSMALL && pages < SLABS; j++)
		if (page_of(small[j]) + 32 == small[j])
			probe_at[pages++] = small[j];
	REQUIRE(pages == SLABS);
	REQUIRE(pthread_barrier_init(&bar, NULL, SLABS + 1) == 0);
	for (int i = 0; i < SLABS; i++)
		REQUIRE(pthread_create(&t[i], NULL, probe, (void *)(intptr_t)i) == 0);
	pthread_barrier_wait(&bar);
	for (int i = 0; i < SLABS; i++)
		CHECK(rc_of[i] == 0);

	/* Freed page by page: this thread's list keeps the last 128, the
	 * pages before go back to the vault's runs (one kept as a spare). */
	for (int j = 0; j < NSMALL; j++)
		CHECK(mpk_secret_free(small[j]) == 0);
	for (int j = 0; j < NBIG; j++)
		REQUIRE(big[j] = mpk_secret_alloc(d, 64));
	pthread_barrier_wait(&bar);
	for (int i = 0; i < SLABS; i++)
		pthread_join(t[i], NULL);

	int stale = 0;
	for (int i = 0; i < SLABS; i++) {
		size_t inside;
		unsigned char *p = probe_at[i];
		if (is_live(p, &inside)) {
			CHECK(rc_of[i] == 0);
		} else {
			CHECK(rc_of[i] == -1 && err_of[i] == EINVAL);
			CHECK(rights_after[i] == MPK_NONE);
		}
		/* The case the check is for: p inside a live 64-byte secret,
		 * and the one after it, on p's old bit, live too. */
		size_t dummy;
		if (inside && is_live(p + 32, &dummy))
			stale++;
	}
	printf("%d of %d remembered addresses lie inside live 64-byte secrets\n", stale, SLABS);
	CHECK(stale > 0);

	for (int j = 0; j < NBIG; j++)
		CHECK(mpk_secret_free(big[j]) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	pthread_barrier_destroy(&bar);
	return t_done();
}
