/*
 * Vault memory goes back as secrets go: 10,000 secrets of one domain,
 * 400 live at most, sizes from 1 to 8192 bytes (a fixed seed), then all
 * freed.  What the vault still holds locked then (VmLck, and memfd_secret
 * mappings the kernel does not charge, 6.1) is at most the cache
 * docs/heaps.md gives (KEEP_*_KIB); before, 3 MiB stayed here with
 * memfd_secret (each chunk's mapping), 1.2 MiB with mlock() (empty
 * slabs, and runs kept by listed blocks).  Every
 * secret keeps its bytes while the vault shrinks around it; afterwards
 * secrets still come, open, hold what is written, and fault when closed.
 * Both backends, with memfd_secret where the kernel has it and with
 * MPKIT_SECRETMEM=off, and after mpk_lockdown() (its filter lets the
 * vault shrink).
 */
#include "t_heap.h"
#include "t_kernel.h"

#define KiB 1024
/* The documented cache, one thread: with memfd_secret, 64 KiB of a
 * chunk's mapping (its kept run and empty slabs) and an idle chunk's
 * page; with mlock(), a kept run and empty slabs, 64 KiB each at most. */
#define KEEP_SECRET_KIB 68
#define KEEP_LOCKED_KIB 128

static bool saw_secret; /* the vault's memory is memfd_secret */

enum { OPS = 10000, LIVE = 400, MAXLEN = 8192 };

/* Memory the process holds locked, in KiB: VmLck, and secret mappings
 * where the kernel keeps them locked without charging VmLck. */
static long held_kib(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	long kib = t_locked_kib();

	REQUIRE(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (!strstr(line, "secretmem") || sscanf(line, "%lx-%lx", &lo, &hi) != 2)
			continue;
		saw_secret = true;
		if (!t_vmflag((void *)lo, "lo"))
			kib += (long)((hi - lo) / KiB);
	}
	fclose(f);
	return kib;
}

static uint64_t seed = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	seed = seed * 6364136223846793005ull + 1442695040888963407ull;
	return seed >> 17;
}

static unsigned char *s[LIVE];
static size_t len[LIVE];

/* Secret i of length n, tagged at both ends with its slot (d is open). */
static void take(mpk_domain *d, int i, size_t n)
{
	REQUIRE(s[i] = mpk_secret_alloc(d, n));
	len[i] = n;
	s[i][0] = s[i][n - 1] = (unsigned char)(i + 1);
}

static void drop(int i)
{
	if (s[i][0] != (unsigned char)(i + 1) || s[i][len[i] - 1] != (unsigned char)(i + 1))
		t_fail("secret %d (%zu bytes) lost its bytes", i, len[i]);
	CHECK(mpk_secret_free(s[i]) == 0);
	s[i] = NULL;
}

static bool locked_down;

static void workload(void)
{
	long base = held_kib(), peak = 0;
	mpk_domain *d = mpk_domain_create("vault-back", MPK_NONE, 0);

	REQUIRE(d);
	if (locked_down) {
		/* A chunk made before, and the filter (kill mode): the vault
		 * shrinks without a call it denies. */
		unsigned char *first = mpk_secret_alloc(d, 5000);
		REQUIRE(first && mpk_secret_free(first) == 0);
		t_segv_recorder_install(); /* for t_read_in_child() after it */
		REQUIRE(mpk_lockdown(0) == 0);
	}
	REQUIRE(mpk_set(d, MPK_RW) == 0);
	for (int op = 0; op < OPS; op++) {
		int i = (int)(next() % LIVE);
		if (s[i])
			drop(i);
		take(d, i, 1 + next() % MAXLEN);
		if (op % 1000 == 999) {
			long now = held_kib();
			peak = now > peak ? now : peak;
		}
	}
	for (int i = 0; i < LIVE; i++)
		drop(i);
	REQUIRE(mpk_set(d, MPK_NONE) == 0);
	long after = held_kib() - base;
	printf("%s%s: held %ld KiB at the peak, %ld KiB after all were freed\n",
	       getenv("MPKIT_SECRETMEM") ? "MPKIT_SECRETMEM=off" : "default",
	       locked_down ? ", locked down" : "", peak - base, after);
	long keep = saw_secret ? KEEP_SECRET_KIB : KEEP_LOCKED_KIB;
	CHECK(peak - base > 1024); /* the workload did take memory */
	CHECK(after >= 0 && after <= keep);

	/* Secrets still work, in pages the vault takes again. */
	unsigned char *k[3];
	static const size_t klen[3] = { 32, 5000, 40000 };
	for (int i = 0; i < 3; i++) {
		REQUIRE(k[i] = mpk_secret_alloc(d, klen[i]));
		REQUIRE(mpk_secret_readwrite(k[i]) == 0);
		memset(k[i], 0x40 + i, klen[i]);
		REQUIRE(mpk_secret_noaccess(k[i]) == 0);
	}
	for (int i = 0; i < 3; i++) {
		CHECK_FAULT(t_read_in_child(k[i] + klen[i] - 1), d, k[i] + klen[i] - 1);
		CHECK_FAULT(t_write_in_child(k[i]), d, k[i]);
		REQUIRE(mpk_secret_readonly(k[i]) == 0);
		CHECK(k[i][0] == 0x40 + i && k[i][klen[i] - 1] == 0x40 + i);
		REQUIRE(mpk_secret_noaccess(k[i]) == 0);
		CHECK(mpk_secret_free(k[i]) == 0);
	}
	CHECK(held_kib() - base <= keep);
	CHECK(mpk_domain_destroy(d) == 0);
}

static void workload_arg(void *arg)
{
	(void)arg;
	workload();
}

/* memfd_secret where the kernel has it, and ordinary memory (the same
 * where it does not: run once); the default again after mpk_lockdown(),
 * where the system has it. */
static void scenario(void)
{
	struct mpk_info in;

	REQUIRE(mpk_info(&in) == 0);
	unsetenv("MPKIT_SECRETMEM");
	if (in.secretmem_vaults)
		t_in_child(workload, "memfd_secret vault memory");
	t_setenv("MPKIT_SECRETMEM", "off");
	t_in_child(workload, "ordinary vault memory");
	unsetenv("MPKIT_SECRETMEM");
	locked_down = !t_lockdown_absent(0);
	if (locked_down) {
		/* Ended by _exit(): LeakSanitizer's exit check cannot stop
		 * the world under the filter. */
		struct t_child c = t_child(workload_arg, NULL, T_CHILD_CHECKS);
		if (c.exit_code)
			t_fail("vault memory after mpk_lockdown(): exit %d", c.exit_code);
		t_child_free(&c);
	}
	locked_down = false;
}

int main(void)
{
	t_need_memlock(4 << 20);
	return t_both_backends(scenario);
}
