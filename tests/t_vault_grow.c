/* SPDX-License-Identifier: MIT */
/*
 * A vault chunk's pages take the domain's protection as secrets need
 * them; the rest of the chunk stays PROT_NONE, a mapping of its own right
 * after them.  So a soft open or close changes only the pages in use, and
 * never splits or joins mappings.  From /proc/self/maps: the first secret
 * leaves the chunk as two mappings, the part in use small; secrets that
 * fill most of the chunk grow that part over all of them, and ten opens
 * and closes leave it so.  Ordinary vault memory stays two mappings;
 * memfd_secret memory, which the kernel charges to RLIMIT_MEMLOCK whole
 * when it is mapped, grows by a mapping at a time, each at least as
 * large as the part before it (nine at most in 1 MiB), then the tail.
 * Opened for reading, every secret reads zeros, the last one too;
 * closed, the last faults (hw: SEGV_PKUERR with the domain's key; soft:
 * SEGV_ACCERR).  mpk_audit() finds nothing, here and in a forked child,
 * where the secrets are zero and the chunk is again two mappings (the
 * part in use mapped afresh as one).  Both backends.
 */
#include <string.h>

#include "t_heap.h"

#define MiB ((size_t)1 << 20)
enum { N = 180, SIZE = 4096 }; /* most of a 1 MiB chunk, in one page class */

static mpk_domain *d;
static unsigned char *s[N];

struct span {
	uintptr_t lo, hi;
	char perms[5];
	bool secret; /* memfd_secret memory */
};

/* The mappings that meet [lo, hi), in order; how many (at most max). */
static int spans(uintptr_t lo, uintptr_t hi, struct span *out, int max)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	REQUIRE(f);
	while (fgets(line, sizeof(line), f)) {
		struct span v;
		if (sscanf(line, "%lx-%lx %4s", &v.lo, &v.hi, v.perms) != 3 || v.hi <= lo || v.lo >= hi)
			continue;
		v.secret = strstr(line, "/secretmem") != NULL;
		if (n < max)
			out[n] = v;
		n++;
	}
	fclose(f);
	return n;
}

/* The chunk that holds p: its mapping in use (memfd_secret: up to nine),
 * then the tail, which ends where the chunk does (CHUNK_SIZE: 1 MiB,
 * aligned) unless all of it is in use. */
static void check_chunk(const void *p, const char *perms, const char *when)
{
	uintptr_t base = (uintptr_t)p & ~(MiB - 1);
	struct span v[12];
	int n = spans(base, base + MiB, v, 12), used = n;

	if (n < 1 || n > 10 || v[0].lo != base || v[n - 1].hi != base + MiB) {
		t_fail("%s: the chunk at %#lx is %d mappings", when, (unsigned long)base, n);
		return;
	}
	if (!v[0].secret && n != 2)
		t_fail("%s: the chunk at %#lx is %d mappings, not 2 (in use, tail)", when,
		       (unsigned long)base, n);
	/* The tail: ordinary memory's second mapping; the one not secret. */
	if (!v[0].secret || !v[n - 1].secret)
		used = n - 1;
	if (used < 1 || used > 9) {
		t_fail("%s: %d mappings in use", when, used);
		return;
	}
	for (int i = 1; i < used; i++)
		CHECK(v[i].secret && v[i].hi - v[i].lo >= v[i - 1].hi - v[i - 1].lo);
	for (int i = 0; i < n; i++) {
		CHECK(i == 0 || v[i].lo == v[i - 1].hi);
		const char *want = i < used ? perms : "---";
		if (strncmp(v[i].perms, want, 3))
			t_fail("%s: mapping %d of the chunk is %.3s, want %s", when, i, v[i].perms, want);
	}
	CHECK((uintptr_t)p < v[used - 1].hi);
}

static void expect_clean(const char *when)
{
	struct mpk_audit_entry e[4];
	int n = mpk_audit(e, 4);

	if (n != 0)
		t_fail("%s: mpk_audit() = %d", when, n);
}

static bool all_zero(void)
{
	bool z = true;

	for (int i = 0; i < N; i++)
		for (int j = 0; j < SIZE; j += 512)
			z &= s[i][j] == 0;
	return z;
}

static void in_child(void)
{
	bool hw = t_backend() == MPK_BACKEND_HW;

	check_chunk(s[0], hw ? "rw-" : "---", "child");
	expect_clean("child");
	REQUIRE(mpk_set(d, MPK_READ) == 0);
	CHECK(all_zero());
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
}

static void scenario(void)
{
	bool hw = t_backend() == MPK_BACKEND_HW;
	const char *closed = hw ? "rw-" : "---", *reading = hw ? "rw-" : "r--";

	REQUIRE(d = mpk_domain_create("grow-vault", MPK_NONE, 0));
	REQUIRE(s[0] = mpk_secret_alloc(d, SIZE));
	check_chunk(s[0], closed, "first secret");
	struct span v[2];
	REQUIRE(spans((uintptr_t)s[0], (uintptr_t)s[0] + 1, v, 2) == 1);
	CHECK(v[0].hi - v[0].lo <= MiB / 8); /* in use: a run of pages, not the chunk */

	for (int i = 1; i < N; i++)
		REQUIRE(s[i] = mpk_secret_alloc(d, SIZE));
	unsigned char *last = s[N - 1];
	/* Every secret in the mapping in use of its chunk. */
	for (int i = 0; i < N; i++)
		check_chunk(s[i], closed, "full");
	expect_clean("full");

	for (int round = 0; round < 10; round++) {
		REQUIRE(mpk_secret_readonly(s[0]) == 0);
		check_chunk(last, reading, "open");
		CHECK(all_zero());
		expect_clean("open");
		REQUIRE(mpk_secret_noaccess(s[0]) == 0);
		check_chunk(last, closed, "closed");
	}
	CHECK_FAULT(t_read_in_child(last + SIZE - 1), d, last + SIZE - 1);
	expect_clean("closed");

	REQUIRE(mpk_set(d, MPK_RW) == 0);
	for (int i = 0; i < N; i++)
		memset(s[i], 0x5a, SIZE);
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	t_in_child(in_child, "a forked child's vault");

	for (int i = 0; i < N; i++)
		CHECK(mpk_secret_free(s[i]) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
}

int main(void)
{
	t_need_memlock(4 * MiB);
	return t_both_backends(scenario);
}
