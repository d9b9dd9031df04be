/*
 * Under valgrind's memcheck, heap blocks are blocks: a write one byte past
 * a 16-byte block is an "Invalid write of size 1 ... 0 bytes after a ...
 * block of size 16 alloc'd", reported at that write; a use of a freed (cached) block is
 * reported too; and a clean program, heap calls included, gets no error at
 * all (the heap's own header reads and writes stay quiet).  The test runs
 * itself under valgrind; skipped where valgrind is absent and in
 * sanitizer builds.
 */
#include "t_heap.h"

static __attribute__((noinline)) void write_at(char *p)
{
	*(volatile char *)p = 1;
}

/* Under valgrind: what the parent asked for. */
static int child(const char *what)
{
	mpk_domain *d = mpk_domain_create("vg-heap", MPK_RW, 0);
	mpk_heap *h = d ? mpk_heap_create(d, 0) : NULL;
	char *p[64];

	if (!h)
		return 3;
	for (int i = 0; i < 64; i++) /* through the cache and back */
		if (!(p[i] = mpk_heap_malloc(h, 16 + (i % 4) * 100)))
			return 3;
	for (int i = 0; i < 64; i++)
		memset(p[i], i, 16);
	for (int i = 0; i < 64; i += 2)
		mpk_heap_free(h, p[i]);
	char *b = mpk_heap_malloc(h, 16);
	char *r = mpk_heap_realloc(h, mpk_heap_malloc(h, 40), 50000);
	if (!b || !r)
		return 3;
	memset(b, 7, 16);
	memset(r, 8, 50000);
	if (!strcmp(what, "overflow"))
		write_at(b + 16);
	if (!strcmp(what, "freed"))
		write_at(p[0]);
	mpk_heap_free(h, b);
	mpk_heap_free(h, r);
	for (int i = 1; i < 64; i += 2)
		mpk_heap_free(h, p[i]);
	mpk_heap_destroy(h);
	mpk_domain_destroy(d);
	return 0;
}

/* Run this program under valgrind doing what; its log into buf.  With
 * the metadata open: sealed there is no cache, and the freed p[0]'s slot
 * would be b's at once. */
static int run(const char *what, char *buf, size_t size)
{
	char log[] = "/tmp/t_heap_valgrind.XXXXXX", arg[64], cmd[512];
	int fd = mkstemp(log);

	REQUIRE(fd >= 0);
	close(fd);
	snprintf(arg, sizeof(arg), "--log-file=%s", log);
	snprintf(cmd, sizeof(cmd),
		 "MPKIT_T_VG=%s MPKIT_HEAP_META=open valgrind -q --error-exitcode=99 %s /proc/%d/exe "
		 ">/dev/null 2>&1",
		 what, arg, (int)getpid());
	int st = system(cmd);
	FILE *f = fopen(log, "r");
	size_t n = f ? fread(buf, 1, size - 1, f) : 0;
	buf[n] = 0;
	if (f)
		fclose(f);
	unlink(log);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(void)
{
	static char buf[65536];
	const char *what = getenv("MPKIT_T_VG");

	if (what)
		return child(what);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	t_skip("valgrind does not run sanitizer builds");
#endif
	if (system("valgrind --version >/dev/null 2>&1"))
		t_skip("valgrind is not installed (apt-get install valgrind)");
	t_backend();

	int rc = run("clean", buf, sizeof(buf));
	if (rc)
		t_fail("a clean run: valgrind exit %d, log:\n%s", rc, buf);
	rc = run("overflow", buf, sizeof(buf));
	CHECK(rc == 99);
	CHECK_HAS(buf, "Invalid write of size 1");
	CHECK_HAS(buf, "is 0 bytes after a");
	CHECK_HAS(buf, "block of size 16 alloc'd");
	CHECK_HAS(buf, "mpk_heap_malloc");
	rc = run("freed", buf, sizeof(buf));
	CHECK(rc == 99);
	CHECK_HAS(buf, "Invalid write of size 1");
	CHECK_HAS(buf, "free");
	return t_done();
}
