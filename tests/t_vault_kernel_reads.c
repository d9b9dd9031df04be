/*
 * Without mpk_lockdown(), the kernel reading a closed secret for the
 * program: process_vm_readv(self), /proc/self/mem and every
 * /proc/self/task/TID/mem, ptrace(PEEKDATA) from a child, vmsplice() of it
 * and splice() from /proc/self/mem, write() from it and read() into it.
 * On memfd_secret vaults (mpk_info().secretmem_vaults) each one fails, on
 * both backends: the pages are not in the kernel's direct map.  An open
 * secret still reads and writes for the thread that opened it, and the
 * kernel still cannot read it.  io_uring: registering the secret as a
 * fixed buffer (the kernel pins it to read it later) fails too.
 */
#define _GNU_SOURCE
#include "t_heap.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

#define N 32
static unsigned char want[N];
static mpk_domain *d;
static unsigned char *s;

/* Whether buf holds the secret: the reader got it. */
static int got(const unsigned char *buf)
{
	return !memcmp(buf, want, N);
}

static int by_process_vm(void)
{
	unsigned char buf[N] = { 0 };
	struct iovec l = { buf, N }, r = { s, N };
	long n = syscall(SYS_process_vm_readv, getpid(), &l, 1, &r, 1, 0);
	return n == N && got(buf);
}

static int by_mem_file(const char *path)
{
	unsigned char buf[N] = { 0 };
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	REQUIRE(fd >= 0);
	ssize_t n = pread(fd, buf, N, (off_t)(uintptr_t)s);
	close(fd);
	return n == N && got(buf);
}

/* Every thread's mem file: how many gave the secret (*files: how many). */
static int by_task_mem(int *files)
{
	char path[300];
	int leaked = 0;
	DIR *dir = opendir("/proc/self/task");
	struct dirent *e;

	REQUIRE(dir);
	*files = 0;
	while ((e = readdir(dir)))
		if (e->d_name[0] != '.') {
			snprintf(path, sizeof(path), "/proc/self/task/%s/mem", e->d_name);
			leaked += by_mem_file(path);
			++*files;
		}
	closedir(dir);
	return leaked;
}

/* A child attaches to this process and peeks at the secret: exit 1 if it
 * got it, 0 if not, 2 if it could not attach. */
static int by_ptrace(void)
{
	pid_t parent = getpid(), pid = fork();

	REQUIRE(pid >= 0);
	if (!pid) {
		if (ptrace(PTRACE_ATTACH, parent, 0, 0))
			_exit(2);
		waitpid(parent, NULL, __WALL);
		unsigned char buf[N];
		int ok = 1;
		for (size_t i = 0; i < N; i += sizeof(long)) {
			errno = 0;
			long w = ptrace(PTRACE_PEEKDATA, parent, s + i, 0);
			ok &= !errno;
			memcpy(buf + i, &w, sizeof(w));
		}
		ptrace(PTRACE_DETACH, parent, 0, 0);
		_exit(ok && got(buf));
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		REQUIRE(errno == EINTR);
	REQUIRE(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* Through a pipe: vmsplice() of the secret, or splice() from mem. */
static int by_splice(int vm)
{
	unsigned char buf[N] = { 0 };
	int p[2], ok = 0;

	REQUIRE(pipe(p) == 0);
	if (vm) {
		struct iovec v = { s, N };
		ok = vmsplice(p[1], &v, 1, 0) == N;
	} else {
		int fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
		loff_t off = (loff_t)(uintptr_t)s;
		REQUIRE(fd >= 0);
		ok = splice(fd, &off, p[1], NULL, N, 0) == N;
		close(fd);
	}
	ok = ok && read(p[0], buf, N) == N && got(buf);
	close(p[0]);
	close(p[1]);
	return ok;
}

/* write() from the secret into a pipe. */
static int by_write(void)
{
	unsigned char buf[N] = { 0 };
	int p[2];

	REQUIRE(pipe(p) == 0);
	int ok = write(p[1], s, N) == N && read(p[0], buf, N) == N && got(buf);
	close(p[0]);
	close(p[1]);
	return ok;
}

/* read() into the secret: whether the kernel could write it. */
static int by_read(void)
{
	unsigned char junk[N];
	int p[2];

	memset(junk, 0xee, N);
	REQUIRE(pipe(p) == 0);
	REQUIRE(write(p[1], junk, N) == N);
	int ok = read(p[0], s, N) == N;
	close(p[0]);
	close(p[1]);
	return ok;
}

/* io_uring: the secret as a registered buffer; -1 if io_uring is off. */
static int by_io_uring(void)
{
	struct io_uring_params prm;
	memset(&prm, 0, sizeof(prm));
	int fd = (int)syscall(__NR_io_uring_setup, 1, &prm);
	if (fd < 0)
		return -1;
	struct iovec v = { s, N };
	long rc = syscall(__NR_io_uring_register, fd, IORING_REGISTER_BUFFERS, &v, 1);
	close(fd);
	return rc == 0;
}

static void readers(const char *state)
{
	int files, leaked = by_task_mem(&files);
	struct {
		const char *name;
		int leaked;
	} r[] = {
		{ "process_vm_readv", by_process_vm() },
		{ "/proc/self/mem", by_mem_file("/proc/self/mem") },
		{ "/proc/self/task/*/mem", leaked },
		{ "ptrace PEEKDATA", by_ptrace() },
		{ "vmsplice", by_splice(1) },
		{ "splice from /proc/self/mem", by_splice(0) },
		{ "io_uring fixed buffer", by_io_uring() },
	};
	CHECK(files >= 1);
	for (size_t i = 0; i < sizeof(r) / sizeof(*r); i++) {
		if (r[i].leaked == 2)
			fprintf(stderr, "    note: %s: ptrace not permitted here\n", r[i].name);
		else if (r[i].leaked < 0)
			fprintf(stderr, "    note: %s: io_uring is off on this kernel\n", r[i].name);
		else if (r[i].leaked)
			t_fail("%s secret: %s read it", state, r[i].name);
	}
}

int main(void)
{
	struct mpk_info in;

	t_backend();
	REQUIRE(mpk_info(&in) == 0);
	if (!in.secretmem_vaults)
		t_skip(in.secretmem ? "MPKIT_SECRETMEM=off: vaults are ordinary memory"
				    : "this kernel has no memfd_secret (Linux 5.14+; "
				      "secretmem.enable=1 before 6.5)");
	t_need_memlock(2 << 20);
	for (int i = 0; i < N; i++)
		want[i] = (unsigned char)(0xa5 ^ (i * 7));
	REQUIRE(d = mpk_domain_create("vault-kreads", MPK_NONE, 0));
	REQUIRE(s = mpk_secret_alloc(d, N));
	MPK_WITH(d, MPK_RW) {
		memcpy(s, want, N);
	}
	/* Closed: every reader fails, and so do the I/O calls. */
	CHECK(mpk_get(d) == MPK_NONE);
	readers("closed");
	CHECK(!by_write());
	CHECK(!by_read());
	/* Open for this thread: it reads and writes; the kernel still
	 * cannot read it for the program. */
	CHECK(mpk_secret_readwrite(s) == 0);
	CHECK(got(s));
	s[0] ^= 1;
	s[0] ^= 1;
	readers("open");
	CHECK(got(s));
	CHECK(mpk_secret_noaccess(s) == 0);
	MPK_WITH(d, MPK_READ) {
		CHECK(got(s));
	}
	CHECK(mpk_secret_free(s) == 0);
	CHECK(mpk_domain_destroy(d) == 0);
	return t_done();
}
