/*
 * mpk_lockdown() refuses (EBUSY) while new code could still appear
 * without a system call the filter sees, and changes nothing then (no
 * filter: mpk_lockdown_flags() ENOENT, PROT_EXEC still allowed; dumpable
 * again): a writable and executable mapping, READ_IMPLIES_EXEC, a memfd
 * mapped executable, a shared executable mapping of a file the process
 * can write.  Each gone, it locks; after that (MPK_LOCK_ERRNO) mremap of
 * the program's own code, shmat(SHM_EXEC) and personality adding
 * READ_IMPLIES_EXEC fail with EPERM.
 */
#include "t_newcode.h"
#include <sys/personality.h>
#include <sys/shm.h>

#ifndef SHM_EXEC
#define SHM_EXEC 0100000
#endif

static char path[PATH_MAX];

static void refused(void)
{
	CHECK_ERR(mpk_lockdown(MPK_LOCK_ERRNO), EBUSY);
	CHECK_ERR(mpk_lockdown_flags(), ENOENT);
	CHECK(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1);
	void *x = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(x != MAP_FAILED); /* no filter */
	if (x != MAP_FAILED)
		munmap(x, 4096);
}

static void rwx_then_lock(void *arg)
{
	(void)arg;
	void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(m != MAP_FAILED);
	refused();
	CHECK(mprotect(m, 4096, PROT_READ | PROT_EXEC) == 0); /* no longer writable */
	CHECK(mpk_lockdown(MPK_LOCK_ERRNO) == 0);
	uintptr_t self = (uintptr_t)rwx_then_lock & ~(uintptr_t)4095;
	CHECK(mremap((void *)self, 4096, 8192, MREMAP_MAYMOVE) == MAP_FAILED && errno == EPERM);
	CHECK(mremap((void *)self, 4096, 4096, MREMAP_MAYMOVE) == MAP_FAILED && errno == EPERM);
	CHECK(mremap(m, 4096, 8192, MREMAP_MAYMOVE) == MAP_FAILED && errno == EPERM);
	CHECK(mremap(m, 0, 4096, MREMAP_MAYMOVE) == MAP_FAILED && errno == EPERM);
	CHECK_ERR(personality(READ_IMPLIES_EXEC), EPERM);
	CHECK(personality(0xffffffff) == PER_LINUX); /* a query */
	int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
	if (id >= 0) {
		CHECK(shmat(id, NULL, SHM_EXEC | SHM_RDONLY) == (void *)-1 && errno == EPERM);
		shmctl(id, IPC_RMID, NULL);
	}
	t_exit_locked();
}

static void personality_then_lock(void *arg)
{
	struct mpk_info in;
	(void)arg;
	/* mpkit started before the switch: a library it loaded under
	 * READ_IMPLIES_EXEC would have rwx data, and keep it */
	REQUIRE(mpk_info(&in) == 0);
	REQUIRE(personality(READ_IMPLIES_EXEC) != -1);
	refused();
	REQUIRE(personality(PER_LINUX) != -1);
	CHECK(mpk_lockdown(MPK_LOCK_ERRNO) == 0);
	t_exit_locked();
}

static void memfd_then_lock(void *arg)
{
	(void)arg;
	int fd = memfd_create("code", 0);
	REQUIRE(fd >= 0 && ftruncate(fd, 4096) == 0);
	void *x = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	REQUIRE(x != MAP_FAILED);
	close(fd); /* no descriptor left: still refused (its pages are not copied) */
	refused();
	CHECK(munmap(x, 4096) == 0);
	CHECK(mpk_lockdown(MPK_LOCK_ERRNO) == 0);
	t_exit_locked();
}

static void shared_then_lock(void *arg)
{
	(void)arg;
	int fd = open(path, O_RDONLY);
	REQUIRE(fd >= 0);
	void *x = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
	REQUIRE(x != MAP_FAILED);
	close(fd);
	refused();
	CHECK(munmap(x, 4096) == 0);
	CHECK(mpk_lockdown(MPK_LOCK_ERRNO) == 0);
	t_exit_locked();
}

int main(void)
{
	void (*cases[])(void *) = { rwx_then_lock, personality_then_lock, memfd_then_lock, shared_then_lock };

	t_need_lockdown(MPK_LOCK_ERRNO);
	REQUIRE(newcode_file(path) == 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct t_child c = t_child(cases[i], NULL, T_CHILD_CHECKS | T_CHILD_STDERR);
		CHECK(c.signal == 0);
		CHECK(c.exit_code == 0);
		CHECK(c.err && strstr(c.err, "mpkit: lockdown: ") && strstr(c.err, "refused"));
		if (c.exit_code && c.err)
			fputs(c.err, stderr);
		t_child_free(&c);
	}
	unlink(path);
	return t_done();
}
