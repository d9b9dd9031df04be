/*
 * Every public call, given each kind of bad argument it rejects (and each
 * state it refuses: a busy domain, a read-only or unmapped range, too many
 * watched pages, gadgets for a scanning lockdown...), fails with its errno
 * and leaves the process exactly as it was: the snapshot of t_snap.h
 * (domains, keys, the kernel's free keys, the caller's PKRU, every signal
 * action, descriptors, threads, mappings and their keys, seccomp,
 * no_new_privs, the counters) is the same before and after each call.
 * Both backends.  The first failing mpk_watch() runs while no watch
 * exists, so that nothing mpkit would make for the first watch is there
 * yet; the domain whose destroy is refused for its heap also has a vault,
 * empty (which a destroy that succeeds takes with it).
 */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sys/socket.h>

#include "t_snap.h"

#if defined(__SANITIZE_ADDRESS__)
/* ASan keeps freed big blocks mapped for a while (quarantine): the scan's
 * buffers would stay, as malloc's state, not mpkit's. */
const char *__asan_default_options(void);
__attribute__((visibility("default"))) const char *__asan_default_options(void)
{
	return "quarantine_size_mb=0";
}
#endif

static size_t page;
static int misuses;

static void on_misuse(const struct mpk_misuse *m, void *arg)
{
	(void)m;
	(void)arg;
	misuses++;
}

static void on_hit(const struct mpk_watch_hit *h, void *arg)
{
	(void)h;
	(void)arg;
}

static void *idle(void *arg)
{
	return arg;
}

static void *tid_of(void *arg)
{
	*(pid_t *)arg = (pid_t)syscall(SYS_gettid);
	return NULL;
}

static void *anon(size_t pages, int prot, int flags)
{
	void *p = mmap(NULL, pages * page, prot, flags | MAP_ANONYMOUS, -1, 0);
	REQUIRE(p != MAP_FAILED);
	return p;
}

static void scenario(void)
{
	bool hw = t_backend() == MPK_BACKEND_HW;
	char buf[64], longname[80];

	page = (size_t)sysconf(_SC_PAGESIZE);
	memset(longname, 'n', 64);
	longname[64] = 0;

	/* Everything the calls below are given, made first. */
	mpk_domain *d = mpk_domain_create("args", MPK_RW, 0);
	mpk_domain *e = mpk_domain_create("args-other", MPK_RW, 0);
	mpk_domain *dead = mpk_domain_create("args-dead", MPK_RW, 0);
	mpk_domain *busy = mpk_domain_create("args-busy", MPK_RW, 0);
	mpk_domain *vault = mpk_domain_create("args-vault", MPK_RW, 0);
	mpk_domain *both = mpk_domain_create("args-both", MPK_RW, 0);
	REQUIRE(d && e && dead && busy && vault && both);
	REQUIRE(mpk_domain_destroy(dead) == 0);
	unsigned char *m = mpk_alloc(d, 2 * page);
	REQUIRE(m);
	m[0] = 1;
	mpk_heap *h = mpk_heap_create(busy, 0);
	REQUIRE(h);
	void *blk = mpk_heap_malloc(h, 100);
	unsigned char *secret = mpk_secret_alloc(vault, 32);
	unsigned char *gone = mpk_secret_alloc(vault, 32);
	REQUIRE(blk && secret && gone);
	REQUIRE(mpk_secret_free(gone) == 0);
	/* A heap, and a vault whose secrets are all gone. */
	mpk_heap *h2 = mpk_heap_create(both, 0);
	REQUIRE(h2);
	REQUIRE(mpk_secret_free(mpk_secret_alloc(both, 32)) == 0);
	REQUIRE(mpk_misuse_handler_set(on_misuse, NULL) == 0);
	unsigned char *plain = anon(4, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	unsigned char *ro = anon(1, PROT_READ, MAP_PRIVATE);
	unsigned char *shared = anon(1, PROT_READ | PROT_WRITE, MAP_SHARED);
	unsigned char *many = anon(257, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	unsigned char *mixed = anon(2, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	REQUIRE(mprotect(mixed + page, page, PROT_READ) == 0);
	/* A page, a hole, a page; the hole is made where it is used. */
	unsigned char *around = anon(3, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	unsigned char *hole = around + page;
	FILE *tf = tmpfile();
	REQUIRE(tf);
	int fd = fileno(tf);
	REQUIRE(ftruncate(fd, (off_t)page) == 0);
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	int fd_ro = open(path, O_RDONLY);
	int sfd[2]; /* sockets cannot be mapped */
	REQUIRE(fd_ro >= 0 && socketpair(AF_UNIX, SOCK_STREAM, 0, sfd) == 0);
	pthread_attr_t huge;
	REQUIRE(pthread_attr_init(&huge) == 0);
	REQUIRE(pthread_attr_setstacksize(&huge, (size_t)1 << 46) == 0);
	pthread_t th;
	pid_t tid;
	/* A thread, once: what the first one costs (TSan starts one of its
	 * own with it) is paid before the snapshots. */
	REQUIRE(pthread_create(&th, NULL, tid_of, &tid) == 0 && pthread_join(th, NULL) == 0);
	t_snap_gone(tid);
	mpk_rights_t saved;
	memset(&saved, 0x5a, sizeof(saved));
	struct mpk_heap_stats hst;

	/* Watches first: no watch has been made in this process. */
	FAILS_CLEANLY(EINVAL, mpk_watch(ro, 8, MPK_WATCH_WRITE, on_hit, NULL));
	FAILS_CLEANLY(EINVAL, mpk_watch(ro, 8, MPK_WATCH_READ | MPK_WATCH_WRITE, on_hit, NULL));
	/* Only now: an allocator that maps its memory (musl's: tmpfile()
	 * above) may put it in any hole. */
	REQUIRE(munmap(hole, page) == 0);
	FAILS_CLEANLY(ENOMEM, mpk_watch(hole, 8, MPK_WATCH_WRITE, on_hit, NULL));
	FAILS_CLEANLY(ENOMEM, mpk_watch(around + page - 8, 16, MPK_WATCH_WRITE, on_hit, NULL));
	FAILS_CLEANLY(ENOSPC, mpk_watch(many, 257 * page, MPK_WATCH_WRITE, on_hit, NULL));
	FAILS_CLEANLY(EINVAL, mpk_watch(m, 8, MPK_WATCH_WRITE, on_hit, NULL));
	FAILS_CLEANLY(EINVAL, mpk_watch(NULL, 8, MPK_WATCH_WRITE, on_hit, NULL));
	FAILS_CLEANLY(EINVAL, mpk_watch(plain, 0, MPK_WATCH_WRITE, on_hit, NULL));
	FAILS_CLEANLY(EINVAL, mpk_watch(plain, SIZE_MAX, MPK_WATCH_WRITE, on_hit, NULL));
	FAILS_CLEANLY(EINVAL, mpk_watch(plain, 8, 0, on_hit, NULL));
	FAILS_CLEANLY(EINVAL, mpk_watch(plain, 8, 4, on_hit, NULL));
	FAILS_CLEANLY(EINVAL, mpk_watch(plain, 8, MPK_WATCH_WRITE, NULL, NULL));
	FAILS_CLEANLY(EINVAL, mpk_unwatch(-1));
	FAILS_CLEANLY(EINVAL, mpk_unwatch(0));
	FAILS_CLEANLY(EINVAL, mpk_unwatch(64));

	/* Domains. */
	FAILS_CLEANLY(EINVAL, mpk_domain_create(NULL, MPK_RW, 0));
	FAILS_CLEANLY(EINVAL, mpk_domain_create("", MPK_RW, 0));
	FAILS_CLEANLY(EINVAL, mpk_domain_create(longname, MPK_RW, 0));
	FAILS_CLEANLY(EINVAL, mpk_domain_create("tab\there", MPK_RW, 0));
	FAILS_CLEANLY(EINVAL, mpk_domain_create("x", 2, 0));
	FAILS_CLEANLY(EINVAL, mpk_domain_create("x", -1, 0));
	FAILS_CLEANLY(EINVAL, mpk_domain_create("x", 4, 0));
	FAILS_CLEANLY(EINVAL, mpk_domain_create("x", MPK_RW, 4)); /* 2: MPK_DOMAIN_SECRETMEM */
	FAILS_CLEANLY(EINVAL, mpk_domain_create("x", MPK_NONE, MPK_DOMAIN_SHARED | 4));
	FAILS_CLEANLY(EINVAL, mpk_domain_destroy(NULL));
	FAILS_CLEANLY(EINVAL, mpk_domain_destroy(dead));
	FAILS_CLEANLY(EBUSY, mpk_domain_destroy(busy));
	FAILS_CLEANLY(EBUSY, mpk_domain_destroy(vault));
	FAILS_CLEANLY(EBUSY, mpk_domain_destroy(both));
	FAILS_CLEANLY(EINVAL, mpk_domain_name(NULL));
	FAILS_CLEANLY(EINVAL, mpk_domain_name(dead));
	FAILS_CLEANLY(EINVAL, mpk_domain_key(NULL));
	if (!hw)
		FAILS_CLEANLY(ENOENT, mpk_domain_key(d));
	FAILS_CLEANLY(ENOENT, mpk_domain_of(plain));
	FAILS_CLEANLY(ENOENT, mpk_domain_of(NULL));

	/* Domain memory. */
	FAILS_CLEANLY(EINVAL, mpk_alloc(NULL, page));
	FAILS_CLEANLY(EINVAL, mpk_alloc(dead, page));
	FAILS_CLEANLY(EINVAL, mpk_alloc(d, 0));
	FAILS_CLEANLY(ENOMEM, mpk_alloc(d, SIZE_MAX));
	FAILS_CLEANLY(EINVAL, mpk_free(d, NULL));
	FAILS_CLEANLY(EINVAL, mpk_free(d, plain));
	FAILS_CLEANLY(EINVAL, mpk_free(d, m + page));
	FAILS_CLEANLY(EINVAL, mpk_free(e, m));
	FAILS_CLEANLY(EINVAL, mpk_free(dead, m));
	FAILS_CLEANLY(EINVAL, mpk_adopt(NULL, plain, page));
	FAILS_CLEANLY(EINVAL, mpk_adopt(d, NULL, page));
	FAILS_CLEANLY(EINVAL, mpk_adopt(d, plain + 1, page));
	FAILS_CLEANLY(EINVAL, mpk_adopt(d, plain, 0));
	FAILS_CLEANLY(EINVAL, mpk_adopt(d, plain, page + 1));
	FAILS_CLEANLY(EINVAL, mpk_adopt(d, ro, page));
	FAILS_CLEANLY(EINVAL, mpk_adopt(d, shared, page));
	FAILS_CLEANLY(EINVAL, mpk_adopt(d, mixed, 2 * page));
	FAILS_CLEANLY(EINVAL, mpk_adopt(d, m, page));
	FAILS_CLEANLY(EINVAL, mpk_adopt(d, hole, page));
	FAILS_CLEANLY(EINVAL, mpk_adopt(d, around, 2 * page));
	FAILS_CLEANLY(EINVAL, mpk_map_file(NULL, fd, 0, page));
	FAILS_CLEANLY(EINVAL, mpk_map_file(dead, fd, 0, page));
	FAILS_CLEANLY(EINVAL, mpk_map_file(d, fd, 0, 0));
	FAILS_CLEANLY(EINVAL, mpk_map_file(d, fd, 1, page));
	FAILS_CLEANLY(EINVAL, mpk_map_file(d, fd, -(off_t)page, page));
	FAILS_CLEANLY(EINVAL, mpk_map_file(d, fd, 0, 2 * page));
	FAILS_CLEANLY(EINVAL, mpk_map_file(d, fd, (off_t)page, 1));
	FAILS_CLEANLY(EBADF, mpk_map_file(d, -1, 0, page));
	FAILS_CLEANLY(EBADF, mpk_map_file(d, 1000, 0, page));
	FAILS_CLEANLY(EACCES, mpk_map_file(d, fd_ro, 0, page));
	FAILS_CLEANLY(ENODEV, mpk_map_file(d, sfd[0], 0, page));

	/* Rights. */
	FAILS_CLEANLY(EINVAL, mpk_set(NULL, MPK_RW));
	FAILS_CLEANLY(EINVAL, mpk_set(dead, MPK_RW));
	FAILS_CLEANLY(EINVAL, mpk_set(d, 2));
	FAILS_CLEANLY(EINVAL, mpk_set(d, 4));
	FAILS_CLEANLY(EINVAL, mpk_set(d, -1));
	FAILS_CLEANLY(EINVAL, mpk_get(NULL));
	FAILS_CLEANLY(EINVAL, mpk_get(dead));
	FAILS_CLEANLY(EINVAL, mpk_enter(NULL, MPK_READ).saved);
	FAILS_CLEANLY(EINVAL, mpk_enter(dead, MPK_READ).saved);
	FAILS_CLEANLY(EINVAL, mpk_enter(d, 2).saved);
	FAILS_CLEANLY(EINVAL, mpk_leave(NULL));
	FAILS_CLEANLY(EINVAL, mpk_set_all(NULL, MPK_RW));
	FAILS_CLEANLY(EINVAL, mpk_set_all(dead, MPK_RW));
	FAILS_CLEANLY(EINVAL, mpk_set_all(d, 2));
	FAILS_CLEANLY(EINVAL, mpk_rights_save(NULL));
	FAILS_CLEANLY(EINVAL, mpk_rights_restore(NULL));
	FAILS_CLEANLY(EINVAL, mpk_rights_restore(&saved));
	CHECK(mpk_get(d) == MPK_RW);

	/* Faults, code, execute-only. */
	FAILS_CLEANLY(EINVAL, mpk_fault_handler_remove());
	FAILS_CLEANLY(EINVAL, mpk_fault_format(NULL, buf, sizeof(buf)));
	FAILS_CLEANLY(EINVAL, mpk_code_alloc(NULL, page));
	FAILS_CLEANLY(EINVAL, mpk_code_alloc(dead, page));
	FAILS_CLEANLY(EINVAL, mpk_code_alloc(d, 0));
	FAILS_CLEANLY(ENOMEM, mpk_code_alloc(d, SIZE_MAX));
	FAILS_CLEANLY(EINVAL, mpk_exec_only(NULL, page));
	FAILS_CLEANLY(EINVAL, mpk_exec_only(plain + 1, page));
	FAILS_CLEANLY(EINVAL, mpk_exec_only(plain, 0));
	FAILS_CLEANLY(EINVAL, mpk_exec_only(plain, SIZE_MAX));
	if (hw) {
		FAILS_CLEANLY(EINVAL, mpk_exec_only(m, page));
		FAILS_CLEANLY(EINVAL, mpk_exec_only(mixed, 2 * page));
		FAILS_CLEANLY(ENOMEM, mpk_exec_only(hole, page));
		FAILS_CLEANLY(ENOENT, mpk_exec_only_key());
	} else {
		FAILS_CLEANLY(ENOTSUP, mpk_exec_only(plain, page));
	}

	/* Heaps. */
	FAILS_CLEANLY(EINVAL, mpk_heap_create(NULL, 0));
	FAILS_CLEANLY(EINVAL, mpk_heap_create(dead, 0));
	FAILS_CLEANLY(EINVAL, mpk_heap_create(d, MPK_HEAP_WIPE << 1));
	FAILS_CLEANLY(EINVAL, mpk_heap_create(d, MPK_HEAP_GUARDED | MPK_HEAP_GUARDED_BELOW));
	FAILS_CLEANLY(EINVAL, mpk_heap_destroy(NULL));
	FAILS_CLEANLY(EINVAL, mpk_heap_destroy((mpk_heap *)plain));
	FAILS_CLEANLY(EINVAL, mpk_heap_domain(NULL));
	FAILS_CLEANLY(EINVAL, mpk_heap_malloc(NULL, 8));
	FAILS_CLEANLY(ENOMEM, mpk_heap_malloc(h, SIZE_MAX));
	FAILS_CLEANLY(ENOMEM, mpk_heap_malloc(h, (size_t)1 << 46));
	FAILS_CLEANLY(ENOMEM, mpk_heap_calloc(h, SIZE_MAX / 2, 3));
	FAILS_CLEANLY(EINVAL, mpk_heap_aligned_alloc(h, 3, 8));
	FAILS_CLEANLY(EINVAL, mpk_heap_aligned_alloc(h, (size_t)4 << 20, 8));
	FAILS_CLEANLY(ENOMEM, mpk_heap_realloc(h, NULL, SIZE_MAX));
	FAILS_CLEANLY(ENOMEM, mpk_heap_realloc(h, blk, SIZE_MAX));
	FAILS_CLEANLY(EINVAL, mpk_heap_realloc(NULL, blk, 8));
	FAILS_CLEANLY(EINVAL, mpk_heap_free(NULL, blk));
	FAILS_CLEANLY(EINVAL, mpk_heap_free(h, plain));
	FAILS_CLEANLY(EINVAL, mpk_heap_free(h, (char *)blk + 16));
	FAILS_CLEANLY(EINVAL, mpk_heap_usable_size(h, NULL));
	FAILS_CLEANLY(EINVAL, mpk_heap_usable_size(h, plain));
	FAILS_CLEANLY(EINVAL, mpk_heap_stats_get(h, NULL));
	FAILS_CLEANLY(EINVAL, mpk_heap_stats_get(NULL, &hst));
	CHECK(misuses == 3);

	/* Secrets and misuse. */
	FAILS_CLEANLY(EINVAL, mpk_secret_alloc(NULL, 32));
	FAILS_CLEANLY(EINVAL, mpk_secret_alloc(dead, 32));
	FAILS_CLEANLY(EINVAL, mpk_secret_alloc(d, 0));
	FAILS_CLEANLY(ENOMEM, mpk_secret_alloc(d, SIZE_MAX));
	FAILS_CLEANLY(ENOMEM, mpk_secret_allocarray(d, SIZE_MAX / 2, 3));
	FAILS_CLEANLY(EINVAL, mpk_secret_allocarray(d, 0, 32));
	FAILS_CLEANLY(EINVAL, mpk_secret_allocarray(NULL, 1, 32));
	FAILS_CLEANLY(EINVAL, mpk_secret_free(plain));
	FAILS_CLEANLY(EINVAL, mpk_secret_free(gone));
	FAILS_CLEANLY(EINVAL, mpk_secret_free(blk));
	FAILS_CLEANLY(EINVAL, mpk_secret_noaccess(NULL));
	FAILS_CLEANLY(EINVAL, mpk_secret_readonly(plain));
	FAILS_CLEANLY(EINVAL, mpk_secret_readwrite(gone));
	FAILS_CLEANLY(EINVAL, mpk_secret_readwrite(blk));
	FAILS_CLEANLY(EINVAL, mpk_misuse_handler_set(NULL, &misuses));
	FAILS_CLEANLY(EINVAL, mpk_misuse_format(NULL, buf, sizeof(buf)));
	CHECK(misuses == 6);

	/* Lockdown, threads, the rest. */
	FAILS_CLEANLY(EINVAL, mpk_lockdown(0x100u));
	FAILS_CLEANLY(EINVAL, mpk_lockdown(0x80000000u));
	/* An inline gadget (xor %eax,%eax; xor %ecx,%ecx; xor %edx,%edx;
	 * wrpkru; ret) for the scan to refuse: glibc's own sites are ROP-only. */
	static const unsigned char gadget[] = { 0x31, 0xc0, 0x31, 0xc9, 0x31, 0xd2, 0x0f, 0x01, 0xef, 0xc3 };
	unsigned char *gp = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(gp != MAP_FAILED);
	memcpy(gp, gadget, sizeof(gadget));
	REQUIRE(mprotect(gp, page, PROT_READ | PROT_EXEC) == 0);
	/* A sanitizer's own bookkeeping grows with each new place that
	 * allocates, and so does the drop-in allocator's heap; the scan
	 * allocates much: it runs once first. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	CHECK_ERR(mpk_lockdown(MPK_LOCK_SCAN | MPK_LOCK_ERRNO), EPERM);
#else
	if (t_dropin_loaded())
		CHECK_ERR(mpk_lockdown(MPK_LOCK_SCAN | MPK_LOCK_ERRNO), EPERM);
#endif
	FAILS_CLEANLY(EPERM, mpk_lockdown(MPK_LOCK_SCAN | MPK_LOCK_ERRNO));
	REQUIRE(munmap(gp, page) == 0);
	FAILS_CLEANLY(ENOENT, mpk_lockdown_flags());
	FAILS_CLEANLY(EINVAL, mpk_thread_create(NULL, NULL, idle, NULL));
	FAILS_CLEANLY(EINVAL, mpk_thread_create(&th, NULL, NULL, NULL));
	t_snap_begin();
	errno = 0;
	CHECK(mpk_thread_create(&th, &huge, idle, NULL) == -1 && (errno == EAGAIN || errno == ENOMEM));
	t_snap_end(0, "mpk_thread_create(huge stack)");
	FAILS_CLEANLY(EINVAL, mpk_set_key_budget(0));
	FAILS_CLEANLY(EINVAL, mpk_set_key_budget(16));
	FAILS_CLEANLY(EINVAL, mpk_set_key_budget(INT_MIN));
	if (hw)
		FAILS_CLEANLY(EBUSY, mpk_set_key_budget(1));
	FAILS_CLEANLY(EINVAL, mpk_backend_name(0));
	FAILS_CLEANLY(EINVAL, mpk_info(NULL));
	FAILS_CLEANLY(EINVAL, mpk_stats_get(NULL));

	/* What was there still works. */
	CHECK(mpk_get(d) == MPK_RW && m[0] == 1);
	CHECK(mpk_heap_free(h, blk) == 0 && mpk_heap_destroy(h) == 0);
	CHECK(mpk_secret_free(secret) == 0);
	CHECK(mpk_domain_destroy(busy) == 0 && mpk_domain_destroy(vault) == 0);
	CHECK(mpk_heap_destroy(h2) == 0 && mpk_domain_destroy(both) == 0);
	int id = mpk_watch(plain, 8, MPK_WATCH_WRITE, on_hit, NULL);
	CHECK(id >= 0 && mpk_unwatch(id) == 0);
	CHECK(mpk_domain_destroy(d) == 0 && mpk_domain_destroy(e) == 0);
	pthread_attr_destroy(&huge);
	fclose(tf);
	close(fd_ro);
	close(sfd[0]);
	close(sfd[1]);
}

int main(void)
{
	return t_both_backends(scenario);
}
