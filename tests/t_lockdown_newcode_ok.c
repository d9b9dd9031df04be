/*
 * What the new-code rules leave to ordinary programs, after
 * mpk_lockdown() with the default action (a wrong denial kills the
 * child: SIGSYS): realloc() of large blocks (glibc moves and grows them
 * with mremap on anonymous memory), mremap growing and shrinking the
 * program's own rw- memory, madvise on it, shmat without SHM_EXEC, the
 * personality query and PER_LINUX; a library dlopen()ed before lockdown
 * (libm: as root, whose every file is writable, its code is copied out of
 * the file) is called after; and code the program mapped from a file it
 * can write before lockdown (as ld.so maps a library from a user's
 * directory) runs as before, still named by its file in /proc/self/maps,
 * its pages anonymous (copied out of the file, not moved: smaps).
 */
#include "t_newcode.h"
#include <dlfcn.h>
#include <sys/personality.h>
#include <sys/shm.h>
#include "../src/shared/procmaps.h"

static char path[PATH_MAX];

/* The mapping at a: named file (NULL: any name) and r-xp, and all its
 * pages anonymous (copied out of the file). */
static bool copied(uintptr_t a, const char *file)
{
	struct mpk_procmaps pm;
	struct mpk_procmaps_vma v;
	bool yes = false;

	if (mpk_procmaps_open(&pm, NULL, "Anonymous"))
		return false;
	while (mpk_procmaps_next(&pm, &v) > 0)
		if (a >= v.lo && a < v.hi)
			yes = (!file || !strcmp(v.path, file)) && !strcmp(v.perms, "r-xp") &&
			      v.field == (long long)((v.hi - v.lo) >> 10);
	mpk_procmaps_close(&pm);
	return yes;
}

static bool pattern_ok(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i += 4096)
		if (p[i] != (unsigned char)(i >> 12))
			return false;
	return true;
}

static void locked(void *arg)
{
	size_t mb = 1 << 20;
	(void)arg;
	int fd = open(path, O_RDONLY);
	REQUIRE(fd >= 0);
	void *text = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	REQUIRE(text != MAP_FAILED);
	close(fd);
	void *libm = dlopen("libm.so.6", RTLD_NOW);
	if (!libm)
		t_fail("dlopen(libm.so.6): %s", dlerror());
	double (*cosine)(double) = libm ? (double (*)(double))dlsym(libm, "cos") : NULL;
	unsigned char *big = malloc(mb);
	REQUIRE(big);
	for (size_t i = 0; i < mb; i += 4096)
		big[i] = (unsigned char)(i >> 12);

	REQUIRE(mpk_lockdown(0) == 0);

	for (size_t to = 64 * mb; to <= 256 * mb; to *= 2) {
		unsigned char *r = realloc(big, to);
		REQUIRE(r);
		big = r;
		CHECK(pattern_ok(big, mb));
	}
	free(big);

	unsigned char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(m != MAP_FAILED);
	m[0] = 42;
	unsigned char *g = mremap(m, 4096, 16 * mb, MREMAP_MAYMOVE);
	CHECK(g != MAP_FAILED);
	if (g != MAP_FAILED) {
		CHECK(g[0] == 42);
		g[16 * mb - 1] = 1;
		CHECK(madvise(g, 16 * mb, MADV_DONTNEED) == 0);
		CHECK(mremap(g, 16 * mb, 4096, 0) == g);
		CHECK(munmap(g, 4096) == 0);
	}

	int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
	if (id >= 0) {
		void *s = shmat(id, NULL, SHM_RDONLY);
		CHECK(s != (void *)-1);
		shmctl(id, IPC_RMID, NULL);
		if (s != (void *)-1)
			CHECK(shmdt(s) == 0);
	}
	CHECK((personality(0xffffffff) & READ_IMPLIES_EXEC) == 0);
	CHECK(personality(PER_LINUX) != -1);

	if (cosine) {
		CHECK(cosine(0.0) == 1.0);
		if (geteuid() == 0) /* every file is root's to write */
			CHECK(copied((uintptr_t)cosine, NULL));
	}
	CHECK(((int (*)(void))text)() == 1);
	CHECK(copied((uintptr_t)text, path)); /* the program's file */
	t_exit_locked();
}

int main(void)
{
	t_need_lockdown(0);
	REQUIRE(newcode_file(path) == 0);
	struct t_child c = t_child(locked, NULL, T_CHILD_CHECKS);
	unlink(path);
	CHECK(c.signal == 0);
	CHECK(c.exit_code == 0);
	return t_done();
}
