/*
 * Two mpkits in one process, as `make check-malloc` and `mpkit run` make
 * them: this test links libmpkit.a and runs itself again with the drop-in
 * allocator preloaded (unless it already is), which brings libmpkit.so
 * with its own heap.  After this test's
 * mpk_lockdown() (the default action: a wrong denial kills the child with
 * SIGSYS), the drop-in's blocks still grow by moving (its mpkit's
 * mremap(MREMAP_FIXED), which the filter denied when it came through libc
 * rather than a trusted site), fresh big blocks come and go, and the bytes
 * stay.  Then: the filter still denies a plain mremap of this program's
 * code (the new-code rule) from outside both sites.
 */
#include "t_malloc.h"
#include "t_pit.h"
#include <limits.h>
#include <sys/mman.h>

static unsigned char want[1 << 20]; /* the block's first MiB */

static void locked(void *arg)
{
	size_t mb = sizeof(want);
	(void)arg;
	unsigned char *big = malloc(mb);
	REQUIRE(big);
	for (size_t i = 0; i < mb; i++)
		want[i] = (unsigned char)(i * 131 >> 7);
	memcpy(big, want, mb);

	REQUIRE(mpk_lockdown(0) == 0);

	for (size_t to = 64 * mb; to <= 256 * mb; to *= 2) {
		unsigned char *r = realloc(big, to);
		REQUIRE(r);
		big = r;
		big[to - 1] = 7;
		CHECK(!memcmp(big, want, mb));
	}
	free(big);
	for (int i = 0; i < 4; i++) {
		unsigned char *b = malloc(32 * mb + (size_t)i * 4096);
		REQUIRE(b);
		b[0] = b[32 * mb - 1] = 1;
		free(b);
	}
	t_exit_locked();
}

/* A plain mremap of this program's code, after lockdown with errno:
 * denied (EPERM), the mapping as it was. */
static void code_stays(void *arg)
{
	(void)arg;
	REQUIRE(mpk_lockdown(MPK_LOCK_ERRNO) == 0);
	uintptr_t at = (uintptr_t)&locked & ~(uintptr_t)4095;
	errno = 0;
	CHECK(mremap((void *)at, 4096, 4096, 0) == MAP_FAILED && errno == EPERM);
	t_exit_locked();
}

int main(void)
{
	t_need_lockdown(0);
	if (!t_dropin_loaded()) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
		t_skip("a sanitizer's runtime owns malloc: the drop-in is not preloaded");
#endif
		static char exe[PATH_MAX], pre[PATH_MAX + 16];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		REQUIRE(n > 0);
		snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", t_malloc_lib());
		char *argv[] = { exe, NULL }, *env[] = { pre, NULL };
		struct t_exec e = { .argv = argv, .env = env };
		struct t_child c = t_child(t_exec_main, &e, T_CHILD_STDOUT | T_CHILD_MERGED);
		if (c.exit_code)
			t_fail("under the drop-in: exit %d:\n%s", c.exit_code, c.out ? c.out : "");
		t_child_free(&c);
		return t_done();
	}
	struct t_child c = t_child(locked, NULL, T_CHILD_CHECKS);
	CHECK(c.signal == 0);
	CHECK(c.exit_code == 0);
	c = t_child(code_stays, NULL, T_CHILD_CHECKS);
	CHECK(c.signal == 0);
	CHECK(c.exit_code == 0);
	return t_done();
}
